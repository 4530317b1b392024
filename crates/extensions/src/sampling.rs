//! Model calls on an extension's behalf (a server's sampling request):
//! the host knows nothing of providers, so the
//! binary hands it a [`Sampler`] that runs one call on the current model.
//! Only the TUI sets one; without it every sampling request is refused.

use futures_util::future::BoxFuture;

/// One model call an extension asks for, in neutral terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleRequest {
    pub system: Option<String>,
    /// The conversation: `(true, text)` for the user, `(false, text)` for
    /// the assistant, oldest first.
    pub messages: Vec<(bool, String)>,
    pub max_tokens: u32,
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleResult {
    pub model: String,
    pub text: String,
    /// The output hit `max_tokens`.
    pub truncated: bool,
}

/// Runs a [`SampleRequest`] on `model` (the session's current model).
pub trait Sampler: Send + Sync {
    fn sample<'a>(
        &'a self,
        model: &'a str,
        request: SampleRequest,
    ) -> BoxFuture<'a, Result<SampleResult, String>>;
}
