//! Rules without I/O: validation, the Action state machine, fingerprints,
//! receipts, credentials. Nothing here touches the database or the network;
//! time comes in as a parameter.

pub mod access;
pub mod action;
pub mod analytics;
pub mod approval;
pub mod billing;
pub mod credentials;
pub mod decision;
pub mod event;
pub mod fingerprint;
pub mod ids;
pub mod jcs;
pub mod notification;
pub mod receipt;
pub mod requests;
pub mod run;
pub mod session;
pub mod strict_json;
pub mod time;
pub mod unsubscribe;
pub mod urls;
pub mod validate;
pub mod webhook;
pub mod words;
