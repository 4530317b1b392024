mod behaviour;
mod models;
mod settings;
mod snapshots;
mod support;
