mod behaviour;
mod settings;
mod snapshots;
mod support;
