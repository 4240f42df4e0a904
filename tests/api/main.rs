#![allow(clippy::unwrap_used, clippy::expect_used)]
//! HTTP tests: each starts the real router on 127.0.0.1:0 with a fresh SQLite
//! data dir and talks HTTP to it.

mod abuse;
mod account;
mod actions;
mod analytics;
mod browser;
mod callbacks;
mod concurrency;
mod context_requests;
mod controls;
mod decisions;
mod expiry;
mod helpers;
mod inbox;
mod invitations;
mod long_polls;
mod mail;
mod metrics;
mod notification_mail;
mod notifications;
mod notifications_ui;
mod receipts;
mod receiver;
mod sessions;
mod signin_oidc;
mod slow_clients;
mod smtp;
mod sources;
mod system;
mod votes;
mod webhooks;
mod webhooks_ui;
mod work;
mod workspaces;
