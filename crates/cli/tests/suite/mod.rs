mod support;

mod agent;
mod completions;
mod config;
mod doctor;
mod ext_hardening;
mod first_run;
mod install;
mod list;
mod logs;
mod manage;
mod nimlet;
mod rpc;
mod scaffold;
mod trust;
mod tui;
mod zot_doctor;
