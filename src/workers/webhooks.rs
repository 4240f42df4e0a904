//! Sends one webhook attempt (guide: "Webhooks"): signs the stored body with
//! the Source's secret(s) at the moment of sending, and refuses to reach into
//! the network hds runs in. Every address a callback host resolves to is
//! checked when the connection is made, by the client's own resolver, and the
//! connection goes to the address that was checked: there is no second
//! lookup a DNS answer could change. No redirects, no proxies, a timeout, and
//! at most `MAX_RESPONSE_BYTES` of the answer are read.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::domain::{urls, webhook};
use crate::store::deliveries::Outgoing;

/// The most of a receiver's answer that is read (then the connection is dropped).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// What one attempt came to.
#[derive(Clone, Debug)]
pub struct Sent {
    pub status_code: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
    /// The address was refused (SSRF rules): retrying will not help.
    pub refused: bool,
}

/// Why an address is not one hds calls, or None when it is public.
fn why_not_public(ip: IpAddr) -> Option<String> {
    urls::non_public_reason(ip)
}

/// A refusal raised by the resolver, found again in reqwest's error chain.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Refused {}

/// The client's resolver: the system's answer (or a `--callback-resolve`
/// override), refused whole when any address in it is not public.
struct CheckedResolver {
    allow_private: bool,
    overrides: Arc<HashMap<String, Vec<IpAddr>>>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let overrides = self.overrides.clone();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let ips: Vec<IpAddr> = match overrides.get(&host) {
                Some(ips) => ips.clone(),
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect(),
            };
            if !allow_private {
                // One private answer refuses the name: a rebinding attacker
                // mixes a public and a private address.
                if let Some((ip, why)) = ips
                    .iter()
                    .find_map(|ip| why_not_public(*ip).map(|w| (ip, w)))
                {
                    return Err(Box::new(Refused(format!(
                        "refused: {host} resolves to {ip} ({why}); hds only calls public addresses"
                    )))
                        as Box<dyn std::error::Error + Send + Sync>);
                }
            }
            let addrs: reqwest::dns::Addrs =
                Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The webhook HTTP client, built once per worker. Where it cannot be
/// built (no CA certificates on the system), each attempt fails with the
/// reason, shown in the delivery log and retried, and the other jobs (e-mail)
/// still run.
pub struct Sender {
    client: Result<reqwest::Client, String>,
    allow_private: bool,
}

impl Sender {
    pub fn new(config: &Config) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut overrides: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (name, ip) in &config.callback_resolve {
            overrides.entry(name.clone()).or_default().push(*ip);
        }
        let resolver = CheckedResolver {
            allow_private: config.allow_private_callbacks,
            overrides: Arc::new(overrides),
        };
        let client = crate::outbound::build(
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .timeout(Duration::from_secs(config.webhook_timeout))
                .connect_timeout(Duration::from_secs(config.webhook_timeout.min(5)))
                .pool_max_idle_per_host(usize::try_from(config.webhook_concurrency).unwrap_or(64))
                .user_agent(concat!("hds-webhooks/", env!("CARGO_PKG_VERSION")))
                .dns_resolver(Arc::new(resolver)),
        );
        Self {
            client,
            allow_private: config.allow_private_callbacks,
        }
    }

    /// Why no webhook can be sent, if so.
    pub fn unusable(&self) -> Option<&str> {
        self.client.as_ref().err().map(String::as_str)
    }

    /// One attempt: POST the body, signed at `timestamp` (unix seconds).
    pub async fn send(&self, d: &Outgoing, timestamp: i64) -> Sent {
        let started = Instant::now();
        let done = |status_code: Option<u16>, error: Option<String>, refused: bool| Sent {
            status_code,
            duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
            error,
            refused,
        };
        // A literal address is never looked up, so the resolver never sees it.
        let url = match url::Url::parse(&d.url) {
            Ok(u) => u,
            Err(e) => return done(None, Some(format!("refused: not a URL ({e})")), true),
        };
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if !self.allow_private {
            if url.scheme() != "https" {
                return done(
                    None,
                    Some("refused: callback_url must use https".into()),
                    true,
                );
            }
            if let Some(ip) = literal
                && let Some(why) = why_not_public(ip)
            {
                return done(
                    None,
                    Some(format!(
                        "refused: {ip} is {why}; hds only calls public addresses"
                    )),
                    true,
                );
            }
        }
        let secrets: Vec<&str> = d.secrets.iter().map(String::as_str).collect();
        let signature = webhook::signature_header(&secrets, &d.id, timestamp, &d.body);
        if signature.is_empty() {
            // Never send an unsigned message; the Source's secret is unusable.
            return done(
                None,
                Some(
                    "not sent: the Source's webhook secret is not a valid whsec_ secret; rotate it"
                        .into(),
                ),
                false,
            );
        }
        let client = match &self.client {
            Ok(c) => c,
            Err(why) => return done(None, Some(format!("not sent: {why}")), false),
        };
        let sent = client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &d.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(d.body.clone())
            .send()
            .await;
        let mut resp = match sent {
            Ok(r) => r,
            Err(e) => {
                if let Some(r) = refusal(&e) {
                    return done(None, Some(r), true);
                }
                return done(None, Some(describe(&e)), false);
            }
        };
        let status = resp.status();
        // Read (a bounded part of) the answer so the connection can be reused.
        let mut read = 0usize;
        while read < MAX_RESPONSE_BYTES {
            match resp.chunk().await {
                Ok(Some(c)) => read += c.len(),
                _ => break,
            }
        }
        let error = (!status.is_success()).then(|| {
            if status.is_redirection() {
                format!("HTTP {status}: hds follows no redirects")
            } else {
                format!("HTTP {status}")
            }
        });
        done(Some(status.as_u16()), error, false)
    }
}

/// The resolver's refusal, if that is why the request failed.
fn refusal(e: &reqwest::Error) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Refused>() {
            return Some(r.0.clone());
        }
        cause = c.source();
    }
    None
}

/// A failure in words, without the URL (reqwest puts it in its Display; the
/// delivery log shows the URL already).
fn describe(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut root: &dyn std::error::Error = e;
    while let Some(next) = root.source() {
        root = next;
    }
    format!("{what}: {root}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outgoing(url: &str) -> Outgoing {
        Outgoing {
            id: "msg_1".into(),
            url: url.into(),
            body: "{}".into(),
            attempts: 0,
            round_start: 0,
            secrets: vec!["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()],
        }
    }

    /// Without an HTTP client (no CA certificates on the system) an attempt
    /// fails with the reason, for the delivery log, and is retried: not
    /// refused, since installing the certificates lets it pass.
    #[tokio::test]
    async fn an_attempt_without_a_client_says_why_and_may_pass_later() {
        let sender = Sender {
            client: Err("the HTTPS client could not be built: no CA certificates".into()),
            allow_private: true,
        };
        let sent = sender.send(&outgoing("http://127.0.0.1:9/h"), 1).await;
        assert_eq!(sent.status_code, None);
        assert!(!sent.refused);
        assert_eq!(
            sent.error.as_deref(),
            Some("not sent: the HTTPS client could not be built: no CA certificates")
        );
    }

    /// Literal addresses never reach the resolver: they are judged before
    /// any connection (a row written before the create-time rules, say).
    #[tokio::test]
    async fn literal_private_addresses_are_refused_without_connecting() {
        let dir = std::path::PathBuf::from("/nonexistent");
        let sender = Sender::new(&Config::for_data_dir(dir));
        for (url, why) in [
            ("https://127.0.0.1/h", "loopback"),
            ("https://[::ffff:0:7f00:1]/h", "IPv4-translated"),
            ("https://[64:ff9b:1::a9fe:a9fe]/h", "local-use NAT64"),
            ("https://[100::1]/h", "discard-only"),
            ("https://169.254.169.254/latest/meta-data", "link-local"),
            ("http://93.184.215.14/h", "https"),
        ] {
            let sent = sender.send(&outgoing(url), 0).await;
            assert!(sent.refused, "{url}");
            assert!(sent.status_code.is_none());
            let err = sent.error.unwrap();
            assert!(
                err.starts_with("refused: ") && err.contains(why),
                "{url}: {err}"
            );
        }
    }
}
