mod behaviour;
mod snapshots;
mod support;
