//! One typed configuration, loaded once in `main` from flags and `HDS_*`
//! environment variables (clap reads both) and passed down. No globals.

use crate::domain::access::Role;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use http::HeaderName;
use ipnet::IpNet;
use serde::Deserialize;

use crate::store::Durability;

pub mod billing;
use billing::BillingFile;
pub use billing::{BillingConfig, PlanConfig, StripeConfig};

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "HDS_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Serve Prometheus metrics at `GET /metrics` on this second address
    /// (e.g. 127.0.0.1:9464); off when unset. Keep it off the public proxy.
    #[arg(long, env = "HDS_METRICS_LISTEN", value_parser = parse_listen)]
    pub metrics_listen: Option<SocketAddr>,
    /// Directory holding the database and the receipt signing keys.
    #[arg(long, env = "HDS_DATA_DIR", default_value = "./hds-data")]
    pub data_dir: PathBuf,
    /// Public base URL (receipt issuer, links, the origin forms must come from).
    /// Set it to the reverse proxy's https URL. Default: http:// and the address
    /// hds listens on (127.0.0.1 when it listens on all addresses).
    #[arg(long = "base-url", env = "HDS_BASE_URL", value_parser = parse_base_url)]
    pub base_url_flag: Option<String>,
    /// The effective public base URL: `--base-url`, or one that follows
    /// `--listen` (set by `hds serve` once it has bound; see `follow_listener`).
    #[arg(skip)]
    pub base_url: String,
    /// `full`: fsync every commit (a decision survives power loss); `normal`:
    /// survives a crash of hds, may lose the last commits on power loss.
    #[arg(long, env = "HDS_DURABILITY", default_value = "full", value_parser = durability_arg())]
    pub durability: Durability,
    /// Accept http and private/loopback callback URLs. For development and tests only.
    /// From the environment: true/false, 1/0, yes/no or on/off.
    #[arg(long, env = "HDS_ALLOW_PRIVATE_CALLBACKS", default_value_t = false,
          value_parser = boolish)]
    pub allow_private_callbacks: bool,
    /// Answers these host names with these addresses when delivering webhooks,
    /// like curl's --resolve (`NAME=IP`, repeatable or comma-separated). The
    /// answers are checked like any DNS answer: a private one is refused
    /// unless --allow-private-callbacks.
    #[arg(long = "callback-resolve", env = "HDS_CALLBACK_RESOLVE", value_delimiter = ',',
        value_name = "NAME=IP", value_parser = parse_resolve)]
    pub callback_resolve: Vec<(String, std::net::IpAddr)>,
    /// Seconds one webhook attempt may take, connection included.
    #[arg(long, env = "HDS_WEBHOOK_TIMEOUT", default_value_t = 10, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=60))]
    pub webhook_timeout: u64,
    /// Webhook attempts in flight at once.
    #[arg(long, env = "HDS_WEBHOOK_CONCURRENCY", default_value_t = 64, value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub webhook_concurrency: u32,
    /// Requests per second per Source or user (burst: twice that); 0 disables.
    #[arg(long, env = "HDS_RATE_LIMIT", default_value_t = 100)]
    pub rate_limit: u32,
    /// Per client address, per minute: sign-in requests that write or call an
    /// identity provider, plus refused credentials (guide: "Rate limiting"); 0 disables.
    #[arg(long, env = "HDS_ANONYMOUS_RATE_LIMIT", default_value_t = 30)]
    pub anonymous_rate_limit: u32,
    /// How many of those one address may send at once before the per-minute rate applies.
    #[arg(long, env = "HDS_ANONYMOUS_BURST", default_value_t = 10,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub anonymous_burst: u32,
    /// Reverse proxies (IPs or CIDRs, comma-separated) whose client-address
    /// header is believed. Default: none; the TCP peer is the client.
    #[arg(long = "trusted-proxy", env = "HDS_TRUSTED_PROXY", value_delimiter = ',', value_name = "IP_OR_CIDR",
        value_parser = crate::http::client_addr::parse_proxy)]
    pub trusted_proxies: Vec<IpNet>,
    /// The header a trusted proxy puts the client's address in; the rightmost
    /// entry that is not a trusted proxy is the client.
    #[arg(long, env = "HDS_CLIENT_IP_HEADER", default_value = "x-forwarded-for")]
    pub client_ip_header: HeaderName,
    /// Seconds a client has to send a request's line and headers, counted from
    /// the connection's start or from its first byte after an idle wait; a
    /// slower client is disconnected.
    #[arg(long, env = "HDS_HEADER_READ_TIMEOUT", default_value_t = 10, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub header_read_timeout: u64,
    /// Seconds a client has to send a request's body, counted from its headers;
    /// a slower body is refused (nothing of it is used) and the connection closed.
    #[arg(long, env = "HDS_BODY_READ_TIMEOUT", default_value_t = 30, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub body_read_timeout: u64,
    /// Seconds a keep-alive connection may wait idle for its next request
    /// before hds closes it. Keep it above a reverse proxy's idle timeout for
    /// its upstream connections (nginx: 60 s).
    #[arg(long, env = "HDS_KEEP_ALIVE_TIMEOUT", default_value_t = 75, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub keep_alive_timeout: u64,
    /// Connections served at once; further ones wait in the listen queue until
    /// one closes. Keep it below the open-file limit (`ulimit -n`) minus ~100.
    #[arg(long, env = "HDS_MAX_CONNECTIONS", default_value_t = 4096, value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections one client address (an IPv6 /64) may hold at once; more
    /// are closed at once. Trusted proxies (`--trusted-proxy`) are exempt.
    /// 0: no cap per address.
    #[arg(
        long,
        env = "HDS_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 256,
        value_name = "N"
    )]
    pub max_connections_per_address: u32,
    /// Seconds a response may wait to be written without any progress (a
    /// client that does not read what it asked for) before hds closes the
    /// connection. A response that keeps flowing is never cut.
    #[arg(long, env = "HDS_WRITE_TIMEOUT", default_value_t = 30, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub write_timeout: u64,
    /// Seconds a stop (SIGTERM) waits for requests under way before it
    /// closes their connections.
    #[arg(long, env = "HDS_DRAIN_TIMEOUT", default_value_t = 30, value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub drain_timeout: u64,
    /// `/ready` answers 503 when the data dir's file system has less than
    /// this many MiB free (writes are about to fail for want of space), so a
    /// load balancer sends no more work; 0: no such check (0-1048576).
    #[arg(long, env = "HDS_READY_MIN_FREE_MB", default_value_t = 64, value_name = "MIB",
        value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub ready_min_free_mb: u64,
    /// On the first start of an empty data dir, the admin to create.
    #[arg(
        long,
        env = "HDS_ADMIN_EMAIL",
        default_value = "admin@localhost.localdomain",
        value_parser = crate::cli::admin_email_arg
    )]
    pub admin_email: String,
    /// The configuration file (sign-in providers); default `<data-dir>/hds.toml`.
    #[arg(long = "config", env = "HDS_CONFIG")]
    pub config_file: Option<PathBuf>,
    /// Sign-in settings, read from the `[auth]` table of the configuration file.
    #[arg(skip)]
    pub auth: AuthConfig,
    /// The mail server, from `[smtp]` of the configuration file; None: no
    /// e-mail is sent (guide: "E-mail").
    #[arg(skip)]
    pub smtp: Option<SmtpConfig>,
    /// Plans and the Stripe link, from `[billing]` (guide: "Plans and billing").
    #[arg(skip)]
    pub billing: BillingConfig,
}

/// How the connection to the mail server is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain connection upgraded by STARTTLS, which is required (port 587).
    Starttls,
    /// TLS from the first byte, "implicit TLS" (port 465).
    Tls,
    /// No encryption at all: for a relay on loopback or a test server.
    None,
}

impl SmtpTls {
    pub fn default_port(self) -> u16 {
        match self {
            Self::Starttls => 587,
            Self::Tls => 465,
            Self::None => 25,
        }
    }
}

/// `[smtp]` of hds.toml, checked: the mail server and the sender. No
/// `Debug` derive: the password is redacted.
#[derive(Clone)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    /// `(username, password)`; None: the server is used without AUTH.
    pub credentials: Option<(String, String)>,
    /// The `From:` of every mail, an RFC 5322 mailbox (`"hds <hds@example.com>"`).
    pub from: lettre::message::Mailbox,
    pub tls: SmtpTls,
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.credentials.as_ref().map(|(u, _)| u))
            .field("password", &self.credentials.as_ref().map(|_| "<redacted>"))
            .field("from", &self.from.to_string())
            .field("tls", &self.tls)
            .finish()
    }
}

/// `[smtp]` as written; `SmtpConfig::check` turns it into the typed one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SmtpFile {
    host: String,
    #[serde(default)]
    port: Option<i64>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    from: String,
    #[serde(default)]
    tls: Option<String>,
}

impl SmtpFile {
    /// Every rule, each failure naming its key.
    fn check(self) -> anyhow::Result<SmtpConfig> {
        let host = self.host.trim().to_owned();
        anyhow::ensure!(
            !host.is_empty()
                && !host.contains(|c: char| c.is_whitespace() || c.is_control() || c == '/'),
            "[smtp] host must be a host name or IP address such as \"smtp.example.com\" (no scheme, no spaces)"
        );
        let tls = match self.tls.as_deref().unwrap_or("starttls") {
            "starttls" => SmtpTls::Starttls,
            "tls" => SmtpTls::Tls,
            "none" => SmtpTls::None,
            other => anyhow::bail!(
                "[smtp] tls = {other:?}: use \"starttls\" (port 587), \"tls\" (port 465) or \"none\" (no encryption)"
            ),
        };
        let port = match self.port {
            None => tls.default_port(),
            Some(p) => u16::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                anyhow::anyhow!("[smtp] port = {p}: use a port between 1 and 65535")
            })?,
        };
        let credentials = match (self.username, self.password) {
            (None, None) => None,
            (Some(u), Some(p)) if !u.is_empty() => Some((u, p)),
            (Some(_), Some(_)) => anyhow::bail!(
                "[smtp] username is empty: give both username and password, or neither"
            ),
            (Some(_), None) => anyhow::bail!(
                "[smtp] password is missing: give both username and password, or neither"
            ),
            (None, Some(_)) => anyhow::bail!(
                "[smtp] username is missing: give both username and password, or neither"
            ),
        };
        let mut from: lettre::message::Mailbox = self.from.parse().map_err(|e| {
            anyhow::anyhow!(
                "[smtp] from = {:?} is not an e-mail mailbox ({e}): write it as \"hds <hds@example.com>\" or \"hds@example.com\"",
                self.from
            )
        })?;
        // An international domain is sent in its ASCII form (IDNA), as the
        // recipients' are: in the envelope, `From` and each `Message-ID`.
        let domain = from.email.domain().to_owned();
        if !domain.is_ascii() {
            let ascii = match url::Host::parse(&domain) {
                Ok(url::Host::Domain(ascii)) => ascii,
                _ => anyhow::bail!(
                    "[smtp] from = {:?}: `{domain}` is not a valid international domain name",
                    self.from
                ),
            };
            from.email = lettre::Address::new(from.email.user(), ascii)
                .map_err(|e| anyhow::anyhow!("[smtp] from = {:?}: {e}", self.from))?;
        }
        Ok(SmtpConfig {
            host,
            port,
            credentials,
            from,
            tls,
        })
    }
}

/// `[auth]` of hds.toml (README: "Sign-in providers").
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Verified e-mails in these domains may sign in without an invitation.
    #[serde(default)]
    pub allowed_email_domains: Vec<String>,
    /// The role such a person gets in the first workspace: `reviewer` (default) or `viewer`.
    #[serde(default = "default_domain_role")]
    pub domain_role: Role,
    /// One table per provider: `[auth.providers.<name>]`.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Whether the sign-in page mails a one-time link to a person who asks
    /// (guide: "With a link by e-mail"). Off unless set: it lets anyone
    /// have mail sent from the instance's address, and where an identity
    /// provider is configured it is a second way in. `true` needs `[smtp]`.
    #[serde(default)]
    pub email_links: bool,
}

/// `--callback-resolve NAME=IP`.
fn parse_resolve(raw: &str) -> Result<(String, std::net::IpAddr), String> {
    let (name, ip) = raw
        .split_once('=')
        .ok_or_else(|| format!("`{raw}`: expected NAME=IP"))?;
    let ip = ip
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|e| format!("`{raw}`: {e}"))?;
    if name.is_empty() {
        return Err(format!("`{raw}`: the name is empty"));
    }
    Ok((name.trim_end_matches('.').to_ascii_lowercase(), ip))
}

/// A yes or no from the environment, in the words operators use, and a
/// refusal that lists them (clap's says only "not a boolean").
fn boolish(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" | "on" => Ok(true),
        "false" | "f" | "0" | "no" | "n" | "off" => Ok(false),
        _ => Err("write true or false (or 1/0, yes/no, y/n, on/off)".to_owned()),
    }
}

/// `--durability full|normal`, listed in `--help` (the store stays free of clap).
fn durability_arg() -> impl clap::builder::TypedValueParser<Value = Durability> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["full", "normal"])
        .map(|s| Durability::parse(&s).unwrap_or(Durability::Full))
}

fn default_domain_role() -> Role {
    Role::Reviewer
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            allowed_email_domains: Vec::new(),
            domain_role: default_domain_role(),
            providers: BTreeMap::new(),
            email_links: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Google,
    Apple,
    Oidc,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Overrides the kind's issuer (Google's, Apple's); required for `oidc`.
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub client_id: Option<String>,
    /// Further audiences accepted in native ID tokens (iOS, Android client ids).
    #[serde(default)]
    pub client_ids: Vec<String>,
    #[serde(default)]
    pub client_secret: Option<String>,
    /// The button label; defaults to "Google", "Apple" or the table name.
    #[serde(default)]
    pub display_name: Option<String>,
}

impl ProviderConfig {
    /// The browser flow needs a web client id; with only native client ids
    /// (`client_ids`) the provider serves the native exchange alone.
    pub fn has_browser_flow(&self) -> bool {
        self.client_id.is_some()
    }

    pub fn issuer_url(&self) -> String {
        match (&self.issuer, self.kind) {
            (Some(i), _) => i.clone(),
            (None, ProviderKind::Google) => "https://accounts.google.com".into(),
            (None, ProviderKind::Apple) => "https://appleid.apple.com".into(),
            (None, ProviderKind::Oidc) => String::new(),
        }
    }

    /// Every accepted `aud`: `client_id` first, then `client_ids`.
    pub fn audiences(&self) -> Vec<String> {
        self.client_id
            .iter()
            .chain(self.client_ids.iter())
            .cloned()
            .collect()
    }

    pub fn label(&self, name: &str) -> String {
        match (&self.display_name, self.kind) {
            (Some(d), _) => d.clone(),
            (None, ProviderKind::Google) => "Google".into(),
            (None, ProviderKind::Apple) => "Apple".into(),
            (None, ProviderKind::Oidc) => name.to_owned(),
        }
    }
}

/// The whole file: `[auth]`, `[smtp]` and `[billing]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    auth: AuthConfig,
    #[serde(default)]
    smtp: Option<SmtpFile>,
    #[serde(default)]
    billing: BillingFile,
}

/// The file, checked.
#[derive(Debug)]
struct Loaded {
    auth: AuthConfig,
    smtp: Option<SmtpConfig>,
    billing: BillingConfig,
}

impl Config {
    /// Whether the sign-in page mails one-time links on request (`[auth]
    /// email_links = true`, with `[smtp]`).
    pub fn email_links(&self) -> bool {
        self.smtp.is_some() && self.auth.email_links
    }

    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("hds.db")
    }

    /// Defaults with another data dir: for tests and `hds init`.
    pub fn for_data_dir(data_dir: PathBuf) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            metrics_listen: None,
            data_dir,
            base_url_flag: None,
            base_url: "http://127.0.0.1:8080".into(),
            durability: Durability::Full,
            allow_private_callbacks: false,
            callback_resolve: Vec::new(),
            webhook_timeout: 10,
            webhook_concurrency: 64,
            rate_limit: 100,
            anonymous_rate_limit: 30,
            anonymous_burst: 10,
            trusted_proxies: Vec::new(),
            client_ip_header: HeaderName::from_static("x-forwarded-for"),
            header_read_timeout: 10,
            body_read_timeout: 30,
            keep_alive_timeout: 75,
            max_connections: 4096,
            max_connections_per_address: 256,
            write_timeout: 30,
            drain_timeout: 30,
            ready_min_free_mb: 64,
            admin_email: "admin@localhost.localdomain".into(),
            config_file: None,
            auth: AuthConfig::default(),
            smtp: None,
            billing: BillingConfig::default(),
        }
    }

    /// Reads the configuration file into `auth`. A missing default file means
    /// "no identity providers"; a named file that is missing, or any file that
    /// does not parse, stops the start with the reason.
    pub fn load_file(&mut self) -> anyhow::Result<()> {
        let (path, required) = match &self.config_file {
            Some(p) => (p.clone(), true),
            None => (self.data_dir.join("hds.toml"), false),
        };
        if !required && !path.exists() {
            return Ok(());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let file = parse_file(&text).with_context(|| format!("in {}", path.display()))?;
        self.auth = file.auth;
        self.smtp = file.smtp;
        self.billing = file.billing;
        Ok(())
    }

    /// Settles the base URL once the listener is bound: `--base-url` when given,
    /// else `http://<bound address>`, so links and the origin check follow
    /// `--listen` (a wildcard address becomes loopback).
    pub fn follow_listener(&mut self, bound: SocketAddr) {
        self.base_url = match &self.base_url_flag {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => {
                let mut addr = bound;
                if addr.ip().is_unspecified() {
                    addr.set_ip(if addr.is_ipv6() {
                        std::net::Ipv6Addr::LOCALHOST.into()
                    } else {
                        std::net::Ipv4Addr::LOCALHOST.into()
                    });
                }
                format!("http://{addr}")
            }
        };
    }

    /// Cookies get `Secure` when the public URL is https.
    pub fn secure_cookies(&self) -> bool {
        self.base_url.starts_with("https://")
    }

    /// `scheme://host[:port]` of the public URL, to compare with `Origin`.
    pub fn origin(&self) -> String {
        url::Url::parse(&self.base_url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default()
    }
}

/// An address to listen on: an IP address and a port. A host name (most
/// often `localhost:8080`) is refused with what to write instead: hds binds
/// one address, and a name may stand for several.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        let port = s
            .rsplit_once(':')
            .map(|(_, p)| p)
            .filter(|p| p.parse::<u16>().is_ok())
            .unwrap_or("8080");
        format!(
            "not an IP address and port: write one such as 127.0.0.1:{port} (this machine only), [::1]:{port} or 0.0.0.0:{port} (every interface); host names such as localhost are not taken"
        )
    })
}

/// `--base-url`: an absolute http(s) URL at the root of its host (links in
/// e-mails and receipts are built on it, and hds serves every route from
/// `/`: a path prefix would make every link a 404).
pub fn parse_base_url(s: &str) -> Result<String, String> {
    let example = "give scheme://host[:port] only, such as https://hds.example.com";
    let u = match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => u,
        Ok(u) if !matches!(u.scheme(), "http" | "https") => {
            return Err(format!(
                "`{s}` is a {} URL; hds is reached over http or https: {example}",
                u.scheme()
            ));
        }
        Err(url::ParseError::InvalidPort) => {
            return Err(format!("`{s}` has a port outside 1–65535: {example}"));
        }
        _ => {
            return Err(format!(
                "`{s}` is not an absolute http(s) URL such as https://hds.example.com"
            ));
        }
    };
    // Published in `GET /`, sign-in links and receipts' `iss`: a password
    // in it would be too.
    if !u.username().is_empty() || u.password().is_some() {
        // Not quoted: the value holds a secret, and errors are logged.
        return Err(format!(
            "the base URL holds a user name or password (user:password@), which would be published in every sign-in link and receipt: {example}"
        ));
    }
    if u.port() == Some(0) {
        return Err(format!("`{s}` has a port outside 1–65535: {example}"));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(format!(
            "`{s}` has a query or fragment (after ? or #): {example}"
        ));
    }
    if u.path() != "/" {
        return Err(format!(
            "`{s}` has a path ({}); hds is served at the root of its own host name (README: \"Behind a reverse proxy\"), so give scheme://host[:port] only",
            u.path()
        ));
    }
    Ok(s.to_owned())
}

/// A TOML error with where it is, and the line itself unless its key may
/// name a secret (a password, a client or webhook secret, a key): the
/// message goes to the log, which is no place for one.
fn toml_error(text: &str, e: &toml::de::Error) -> anyhow::Error {
    let Some(span) = e.span() else {
        return anyhow::anyhow!("{}", e.message().trim_end());
    };
    let before = &text[..span.start.min(text.len())];
    let line_no = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or_default();
    let lower = line.to_ascii_lowercase();
    let secret = ["password", "secret", "token", "key"]
        .iter()
        .any(|w| lower.contains(w));
    // toml's message may quote the value (`invalid type: integer `12345``):
    // neither it nor the line is shown where a secret may stand.
    if secret {
        // These messages name keys only, never a value: a misspelt
        // `secret_keys` is still named, though its line is not shown.
        let message = e.message().trim_end();
        if ["unknown field `", "missing field `", "duplicate key"]
            .iter()
            .any(|p| message.starts_with(p))
        {
            return anyhow::anyhow!(
                "{message} at line {line_no}, column {col} (the line is not shown: it may hold a secret)"
            );
        }
        return anyhow::anyhow!(
            "a value at line {line_no}, column {col} is not valid TOML or not of the right type (the line is not shown: it may hold a secret)"
        );
    }
    anyhow::anyhow!(
        "{} at line {line_no}, column {col}: `{}`",
        e.message().trim_end(),
        line.trim()
    )
}

fn parse_file(text: &str) -> anyhow::Result<Loaded> {
    let file: FileConfig = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    anyhow::ensure!(
        matches!(file.auth.domain_role, Role::Reviewer | Role::Viewer),
        "[auth] domain_role must be \"reviewer\" or \"viewer\""
    );
    anyhow::ensure!(
        !file.auth.email_links || file.smtp.is_some(),
        "[auth] email_links = true needs [smtp]: hds mails the links (set up [smtp], or remove email_links)"
    );
    for (name, p) in &file.auth.providers {
        anyhow::ensure!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.is_empty(),
            "provider name `{name}`: use lowercase letters, digits and '-' (it appears in URLs)"
        );
        anyhow::ensure!(
            p.client_id.is_some() || !p.client_ids.is_empty(),
            "[auth.providers.{name}] needs client_id (or client_ids)"
        );
        anyhow::ensure!(
            !p.issuer_url().is_empty(),
            "[auth.providers.{name}] of kind oidc needs issuer"
        );
        // The sign-in button reads "Continue with <display_name>".
        if let Some(d) = &p.display_name {
            anyhow::ensure!(
                !crate::domain::validate::says_nothing(d)
                    && crate::domain::validate::is_one_line(d)
                    && d.chars().count() <= 60,
                "[auth.providers.{name}] display_name must be a name of 1 to 60 characters on one line (the sign-in button reads \"Continue with <display_name>\"); leave it out to use {}",
                match p.kind {
                    ProviderKind::Google => "Google",
                    ProviderKind::Apple => "Apple",
                    ProviderKind::Oidc => name.as_str(),
                }
            );
        }
        let issuer = p.issuer_url();
        anyhow::ensure!(
            url::Url::parse(&issuer)
                .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some()),
            "[auth.providers.{name}] issuer `{issuer}` is not an absolute URL such as https://sso.example.com (the provider's issuer, as its discovery document names it)"
        );
    }
    Ok(Loaded {
        auth: file.auth,
        smtp: file.smtp.map(SmtpFile::check).transpose()?,
        billing: billing::check(file.billing)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's display_name names the sign-in button: not blank, one
    /// line, at most 60 characters.
    #[test]
    fn a_display_name_must_show_something() {
        let with = |d: &str| {
            parse_file(&format!(
                "[auth.providers.sso]\nkind = \"oidc\"\nissuer = \"https://sso.example.com\"\nclient_id = \"hds\"\ndisplay_name = \"{d}\"\n"
            ))
        };
        assert!(with("Corp SSO").is_ok());
        for bad in [
            "",
            "  ",
            "\\u200b",
            "a\\nb",
            "a\\u2028b",
            "Corp \\u202eOSS",
            &"x".repeat(61),
        ] {
            let e = with(bad).unwrap_err();
            assert!(
                format!("{e:#}").contains("display_name must be"),
                "{bad:?}: {e:#}"
            );
        }
    }

    /// Mailed sign-in links: off unless asked for, never without `[smtp]`.
    #[test]
    fn email_links_follow_smtp_and_providers() {
        let smtp = "[smtp]\nhost = \"mail.example.com\"\nfrom = \"hds@example.com\"\n";
        let provider = "[auth.providers.sso]\nkind = \"oidc\"\nissuer = \"https://sso.example.com\"\nclient_id = \"hds\"\n";
        let on = |text: &str| {
            let loaded = parse_file(text).unwrap();
            let mut c = Config::for_data_dir(std::path::PathBuf::from("/tmp/x"));
            c.auth = loaded.auth;
            c.smtp = loaded.smtp;
            c.email_links()
        };
        assert!(!on(""));
        assert!(!on(smtp));
        assert!(on(&format!("[auth]\nemail_links = true\n{smtp}")));
        assert!(on(&format!("[auth]\nemail_links = true\n{smtp}{provider}")));
        assert!(!on(&format!("[auth]\nemail_links = false\n{smtp}")));
        let e = parse_file("[auth]\nemail_links = true\n").unwrap_err();
        assert!(
            format!("{e:#}").contains("email_links = true needs [smtp]"),
            "{e:#}"
        );
    }

    #[test]
    fn provider_tables_parse_with_kind_defaults() {
        let f = parse_file(
            r#"
[auth]
allowed_email_domains = ["example.com"]
[auth.providers.google]
kind = "google"
client_id = "web.apps.googleusercontent.com"
client_ids = ["ios.apps.googleusercontent.com"]
client_secret = "s"
[auth.providers.corp]
kind = "oidc"
issuer = "https://sso.example.com/realms/main"
client_id = "hds"
"#,
        )
        .unwrap();
        let g = &f.auth.providers["google"];
        assert_eq!(g.issuer_url(), "https://accounts.google.com");
        assert_eq!(g.audiences().len(), 2);
        assert_eq!(f.auth.providers["corp"].label("corp"), "corp");
    }

    #[test]
    fn mistakes_are_named() {
        let e = parse_file("[auth.providers.x]\nkind = \"oidc\"\nclient_id = \"a\"\n").unwrap_err();
        assert!(e.to_string().contains("needs issuer"), "{e}");
        let e = parse_file("[auth]\nallowed_domains = []\n").unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let e = parse_file(
            "[auth.providers.x]\nkind = \"oidc\"\nclient_id = \"a\"\nissuer = \"sso.example.com\"\n",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("issuer `sso.example.com` is not an absolute URL"),
            "{e}"
        );
        // A syntax error says where; a line that may hold a secret is not shown.
        for secret in [
            "[smtp]\nhost = \"mail\"\npassword=s3cretpw\n",
            "smtp = { host = \"mail\", password = s3cretpw }\n",
            "[smtp]\nhost = \"mail\"\npassword = 12345\n",
        ] {
            let said = parse_file(secret).unwrap_err().to_string();
            assert!(
                said.contains("line") && !said.contains("s3cretpw") && !said.contains("12345"),
                "{said}"
            );
        }
        let e = parse_file("[auth]\ndomain_role = reviewer\n").unwrap_err();
        assert!(e.to_string().contains("`domain_role = reviewer`"), "{e}");
        // A misspelt key on such a line is still named, its value not shown.
        let said = parse_file("[billing.stripe]\nsecret_keys = \"sk_live_x\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("unknown field `secret_keys`") && !said.contains("sk_live_x"),
            "{said}"
        );
        let said = parse_file("[billing.stripe]\nsecret_key = \"sk_a\"\nsecret_key = \"sk_b\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("duplicate key") && !said.contains("sk_a") && !said.contains("sk_b"),
            "{said}"
        );
    }

    #[test]
    fn a_yes_or_no_takes_the_usual_words_and_a_refusal_lists_them() {
        for (v, want) in [
            ("Yes", true),
            ("1", true),
            ("on", true),
            ("OFF", false),
            ("0", false),
        ] {
            assert_eq!(boolish(v), Ok(want), "{v}");
        }
        let e = boolish("maybe").unwrap_err();
        assert!(e.contains("1/0, yes/no, y/n, on/off"), "{e}");
    }

    #[test]
    fn the_base_url_is_the_root_of_an_http_host() {
        assert!(parse_base_url("https://hds.example.com").is_ok());
        assert!(parse_base_url("http://127.0.0.1:8080/").is_ok());
        let e = parse_base_url("http://127.0.0.1:8080/hds").unwrap_err();
        assert!(e.contains("has a path (/hds)"), "{e}");
        assert!(parse_base_url("notaurl").is_err());
        assert!(
            parse_base_url("ftp://x")
                .unwrap_err()
                .contains("is a ftp URL")
        );
        // Credentials would be published in links and receipts; the
        // message does not repeat them.
        let e = parse_base_url("https://ops:hunter2@hds.example.com").unwrap_err();
        assert!(
            e.contains("user name or password") && !e.contains("hunter2"),
            "{e}"
        );
        let e = parse_base_url("https://hds.example.com/?x=1").unwrap_err();
        assert!(e.contains("has a query or fragment"), "{e}");
        for bad in ["https://hds.example.com:99999", "https://hds.example.com:0"] {
            let e = parse_base_url(bad).unwrap_err();
            assert!(e.contains("port outside 1–65535"), "{e}");
        }
    }

    #[test]
    fn smtp_defaults_follow_tls_and_the_password_is_redacted() {
        let f = parse_file(
            "[smtp]\nhost = \"email-smtp.eu-west-1.amazonaws.com\"\nusername = \"AKIA\"\npassword = \"s3cret\"\nfrom = \"hds <hds@example.com>\"\n",
        )
        .unwrap();
        let s = f.smtp.unwrap();
        assert_eq!((s.tls, s.port), (SmtpTls::Starttls, 587));
        assert_eq!(s.from.email.to_string(), "hds@example.com");
        assert!(!format!("{s:?}").contains("s3cret"));
        for (tls, port) in [("tls", 465), ("none", 25)] {
            let f = parse_file(&format!(
                "[smtp]\nhost = \"127.0.0.1\"\nfrom = \"a@example.com\"\ntls = \"{tls}\"\n"
            ))
            .unwrap();
            assert_eq!(f.smtp.unwrap().port, port);
        }
        assert!(parse_file("").unwrap().smtp.is_none());
    }

    #[test]
    fn smtp_mistakes_name_the_key() {
        let base = "host = \"smtp.example.com\"\nfrom = \"hds@example.com\"\n";
        for (extra, key) in [
            ("tls = \"ssl\"\n", "[smtp] tls"),
            ("port = 0\n", "[smtp] port"),
            ("port = 70000\n", "[smtp] port"),
            ("username = \"u\"\n", "[smtp] password"),
            ("password = \"p\"\n", "[smtp] username"),
        ] {
            let e = parse_file(&format!("[smtp]\n{base}{extra}")).unwrap_err();
            assert!(e.to_string().contains(key), "{extra}: {e}");
        }
        let e = parse_file("[smtp]\nhost = \"h\"\nfrom = \"not an address\"\n").unwrap_err();
        assert!(e.to_string().contains("[smtp] from"), "{e}");
        // An international domain is kept in its ASCII form, name and all.
        let idn = parse_file("[smtp]\nhost = \"h\"\nfrom = \"hds <hds@exämple.com>\"\n").unwrap();
        let from = &idn.smtp.as_ref().unwrap().from;
        assert_eq!(from.email.to_string(), "hds@xn--exmple-cua.com");
        assert_eq!(from.name.as_deref(), Some("hds"));
        let e = parse_file("[smtp]\nhost = \"\"\nfrom = \"a@example.com\"\n").unwrap_err();
        assert!(e.to_string().contains("[smtp] host"), "{e}");
        let e = parse_file("[smtp]\nfrom = \"a@example.com\"\n").unwrap_err();
        assert!(e.to_string().contains("host"), "{e}");
    }
}
