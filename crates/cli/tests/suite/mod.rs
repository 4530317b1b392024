mod support;

mod doctor;
mod install;
mod list;
mod logs;
mod manage;
mod trust;
