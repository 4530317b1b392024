//! Placeholder until the provider lands.

use tokio::sync::mpsc;

use super::{Completion, ProviderConfig, ProviderError, Request, StreamEvent};

pub(crate) async fn complete(
    _http: &reqwest::Client,
    _config: &ProviderConfig,
    _request: &Request,
    _events: &mpsc::UnboundedSender<StreamEvent>,
) -> Result<Completion, ProviderError> {
    Err(ProviderError::Stream { provider: "none", message: "not implemented".into() })
}
