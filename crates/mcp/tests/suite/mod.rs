mod ecosystem;
mod legacy_sse;
mod oauth;
mod trust;
