//! Summary figures for the plain-harness benchmarks (`cargo bench`), so
//! every bench reports a sample set the same way.

use std::fmt;
use std::time::Duration;

/// Median, 99th percentile and mean of a set of timings.
pub struct Stats {
    pub median: Duration,
    pub p99: Duration,
    pub mean: Duration,
}

impl Stats {
    /// The figures of `times` (at least one sample).
    pub fn of(times: &[Duration]) -> Self {
        let mut sorted = times.to_vec();
        sorted.sort();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        let total: Duration = sorted.iter().sum();
        Self {
            median: at(0.5),
            p99: at(0.99),
            mean: total / u32::try_from(sorted.len()).unwrap(),
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        write!(
            f,
            "median {:.1} µs, p99 {:.1} µs, mean {:.1} µs",
            us(self.median),
            us(self.p99),
            us(self.mean)
        )
    }
}
