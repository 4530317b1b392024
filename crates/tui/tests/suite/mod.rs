mod behaviour;
mod long_chat;
mod models;
mod settings;
mod snapshots;
mod support;
