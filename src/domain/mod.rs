//! Rules without I/O: validation, the Action state machine, fingerprints,
//! receipts, credentials. Nothing here touches the database or the network;
//! time comes in as a parameter.

pub mod action;
pub mod credentials;
pub mod decision;
pub mod fingerprint;
pub mod ids;
pub mod receipt;
pub mod session;
pub mod time;
pub mod urls;
pub mod validate;
