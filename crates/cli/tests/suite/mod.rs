mod support;

mod agent;
mod doctor;
mod install;
mod list;
mod logs;
mod manage;
mod rpc;
mod trust;
mod tui;
