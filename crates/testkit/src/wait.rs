//! Waiting in tests with a deadline, never a bare sleep that hopes.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

/// How often `eventually` re-checks.
const POLL: Duration = Duration::from_millis(20);

/// Polls `cond` until it holds or `limit` passes; returns whether it held.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The next message matching `pred`, skipping others, within `limit`.
pub async fn next_matching<T>(
    rx: &mut UnboundedReceiver<T>,
    limit: Duration,
    mut pred: impl FnMut(&T) -> bool,
) -> Option<T> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(item)) if pred(&item) => return Some(item),
            Ok(Some(_)) => continue,
            _ => return None,
        }
    }
}
