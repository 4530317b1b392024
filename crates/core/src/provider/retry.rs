//! Retries before the first byte.
