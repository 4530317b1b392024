//! Protocol dialects: how each protocol's handshake and frames map onto the
//! host's one internal model (registrations, replies, host events). Nothing
//! above this layer knows which protocol an extension speaks.

pub(crate) mod nimlet;
pub(crate) mod zot;
