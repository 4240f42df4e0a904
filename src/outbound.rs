//! The HTTP clients hds builds for outbound calls (webhooks, sign-in
//! providers, Stripe, `verify-receipt --keys URL`): building one reads the
//! system's trust store, and where it holds no CA certificates (a slim
//! container image without Debian's `ca-certificates`) the build fails. The
//! message then says what to install, not reqwest's bare "builder error".

use std::error::Error as _;

/// Builds the client, or says why it could not be built, with every cause.
pub fn build(builder: reqwest::ClientBuilder) -> Result<reqwest::Client, String> {
    builder.build().map_err(|e| explain(&e))
}

/// `e` and its causes on one line, with what to install when the causes
/// speak of certificates.
fn explain(e: &reqwest::Error) -> String {
    let mut said = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        said.push_str(": ");
        said.push_str(&c.to_string());
        cause = c.source();
    }
    let lower = said.to_ascii_lowercase();
    if lower.contains("certificate") || lower.contains("builder error") {
        said.push_str(
            " (hds reads the system's CA certificates to make HTTPS requests: install them, \
             e.g. Debian's ca-certificates package)",
        );
    }
    format!("the HTTPS client could not be built: {said}")
}
