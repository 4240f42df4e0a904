//! Sign-in with identity providers (guide: "Sign-in and sessions"): the browser flow
//! (authorization code + PKCE + state + nonce), the native ID-token exchange
//! for apps, and Apple's code exchange. Providers come from
//! `[auth.providers.*]`; their discovery documents and JWKS are cached for an
//! hour (`providers`), ID tokens are checked in `id_token`. Who may sign in,
//! and the session that follows, is `service::signin`'s business.

mod id_token;
mod providers;

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreClientAuthMethod};
use openidconnect::{
    AuthType, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl,
    RequestTokenError, Scope, TokenResponse,
};

use crate::config::{ProviderConfig, ProviderKind};
use crate::domain::credentials::{self, hash_secret, hashes_match};
use crate::domain::time;
use crate::error::{Code, Error, Result};
use crate::service::Services;
use crate::service::signin::{self, Identity, SessionKind, SessionMeta, SignedIn};
use crate::store::oidc::{self as store, Login};
use id_token::{Expect, NonceRule};
pub use providers::Providers;
use providers::{Issuer, unavailable};

/// A browser has this long to come back from the provider.
const LOGIN_LIFETIME: ::time::Duration = ::time::Duration::minutes(10);

type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// The configured provider called `name`.
pub fn provider<'a>(s: &'a Services, name: &str) -> Result<&'a ProviderConfig> {
    s.config.auth.providers.get(name).ok_or_else(|| {
        Error::new(
            Code::ProviderNotFound,
            format!("no sign-in provider is named {name:?}; GET /v1/auth/providers lists them"),
        )
    })
}

/// A provider with a browser flow; a native-only one is refused before any
/// outbound call (discovery), as an unknown one is.
fn browser_provider<'a>(s: &'a Services, name: &str) -> Result<&'a ProviderConfig> {
    let cfg = provider(s, name)?;
    if !cfg.has_browser_flow() {
        return Err(Error::new(
            Code::ProviderNotFound,
            format!(
                "the sign-in provider {name:?} has no browser sign-in (only native client ids); \
                 GET /v1/auth/providers lists the methods"
            ),
        ));
    }
    Ok(cfg)
}

fn redirect_uri(s: &Services, name: &str) -> String {
    format!(
        "{}/v1/auth/{name}/callback",
        s.config.base_url.trim_end_matches('/')
    )
}

/// The browser client: our client id and secret, our callback, and the
/// token-endpoint authentication the provider supports (Apple: only
/// client_secret_post; OIDC's default: client_secret_basic).
fn client(s: &Services, name: &str, cfg: &ProviderConfig, issuer: &Issuer) -> Result<Client> {
    let client_id = cfg.client_id.clone().ok_or_else(|| {
        Error::new(
            Code::ProviderNotFound,
            format!("provider {name} has no client_id, so it only accepts native sign-in"),
        )
    })?;
    let redirect = RedirectUrl::new(redirect_uri(s, name))
        .map_err(|e| Error::internal(anyhow::anyhow!("base_url makes a bad callback URL: {e}")))?;
    let methods = issuer.metadata.token_endpoint_auth_methods_supported();
    let post_only = methods.is_some_and(|m| {
        m.contains(&CoreClientAuthMethod::ClientSecretPost)
            && !m.contains(&CoreClientAuthMethod::ClientSecretBasic)
    });
    Ok(CoreClient::from_provider_metadata(
        issuer.metadata.clone(),
        ClientId::new(client_id),
        cfg.client_secret.clone().map(ClientSecret::new),
    )
    .set_redirect_uri(redirect)
    .set_auth_type(if post_only {
        AuthType::RequestBody
    } else {
        AuthType::BasicAuth
    }))
}

/// `iss` values accepted for this provider: the discovered issuer, and for
/// Google also its scheme-less spelling (`accounts.google.com`), which Google
/// documents as valid in its ID tokens.
fn accepted_issuers(cfg: &ProviderConfig, issuer: &Issuer) -> Vec<String> {
    let canonical = issuer.metadata.issuer().as_str().to_owned();
    let bare = canonical.split_once("://").map(|(_, rest)| rest.to_owned());
    match (cfg.kind, bare) {
        (ProviderKind::Google, Some(bare)) => vec![canonical, bare],
        _ => vec![canonical],
    }
}

fn now_unix(s: &Services) -> f64 {
    let now = s.clock.now();
    now.unix_timestamp() as f64 + f64::from(now.millisecond()) / 1000.0
}

/// The person as hds records them. The issuer is the discovered one, not the
/// token's spelling, so Google's two spellings are one identity.
fn identity(issuer: &Issuer, claims: id_token::Claims, fallback_name: Option<String>) -> Identity {
    Identity {
        issuer: issuer.metadata.issuer().as_str().to_owned(),
        subject: claims.sub,
        email: claims.email,
        email_verified: claims.email_verified,
        name: claims.name.or(fallback_name).and_then(|n| shown_name(&n)),
    }
}

/// A provider's `name` as hds shows it: one line (control characters and
/// direction overrides become spaces, runs of spaces one), at most 100
/// characters; None when nothing is left. It is shown beside e-mails on
/// every page, in e-mails and in notifications.
fn shown_name(name: &str) -> Option<String> {
    let line: String = name
        .chars()
        .map(|c| {
            if c.is_control() || crate::domain::validate::has_direction_override(&c.to_string()) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let words: Vec<&str> = line.split_whitespace().collect();
    let joined = words.join(" ");
    let cut: String = joined.chars().take(100).collect();
    let cut = cut.trim_end().to_owned();
    (!cut.is_empty()).then_some(cut)
}

/// Where to send the browser, and the binding cookie to set.
pub struct Started {
    pub authorize_url: String,
    pub binding: String,
}

/// Whether a binding cookie value is one hds could have issued.
fn plausible_binding(v: &str) -> bool {
    (32..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Starts the browser flow: records the login (state hashed, nonce, PKCE
/// verifier, `next`, browser binding) and returns the provider's authorize
/// URL. A browser that already holds a binding keeps it, so two tabs signing
/// in at once both succeed. `next` must already be checked as a local path.
pub async fn start(
    s: &Services,
    name: &str,
    next: String,
    binding: Option<&str>,
) -> Result<Started> {
    let cfg = browser_provider(s, name)?;
    let issuer = s.oidc.issuer(name, cfg).await?;
    let client = client(s, name, cfg, &issuer)?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let scopes: &[&str] = match cfg.kind {
        ProviderKind::Apple => &["name", "email"],
        _ => &["email", "profile"],
    };
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scopes(scopes.iter().map(|sc| Scope::new((*sc).to_owned())))
        .set_pkce_challenge(challenge);
    if cfg.kind == ProviderKind::Apple {
        // Apple refuses the name/email scopes unless the answer is a form POST.
        request = request.add_extra_param("response_mode", "form_post");
    }
    let (url, state, nonce) = request.url();
    let binding = binding
        .filter(|b| plausible_binding(b))
        .map(str::to_owned)
        .unwrap_or_else(credentials::new_secret);
    let now = s.clock.now();
    let login = Login {
        provider: name.to_owned(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        next,
        binding_hash: hash_secret(&binding),
        expires_at: time::format(now + LOGIN_LIFETIME),
    };
    let state = state.secret().clone();
    s.db.write(move |c| {
        let now = time::format(now);
        // Abandoned logins go here rather than in a worker: the table stays tiny.
        store::purge_expired(c, &now)?;
        store::insert(c, &state, &login, &now)
    })
    .await?;
    Ok(Started {
        authorize_url: url.to_string(),
        binding,
    })
}

/// The provider's answer at the callback (query string, or Apple's form POST).
#[derive(Debug, Default, serde::Deserialize)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    /// RFC 9207: the issuer that answered; checked when present.
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// Apple, first sign-in only: `{"name":{"firstName","lastName"},"email"}`.
    pub user: Option<String>,
}

fn binding_refused(why: &str) -> Error {
    Error::new(
        Code::CsrfFailed,
        format!("this sign-in cannot be finished: {why}; start it again from the sign-in page"),
    )
}

/// Finishes the browser flow: takes the login (once), checks the browser
/// binding and the answering issuer, exchanges the code with the PKCE
/// verifier, verifies the ID token and signs the person in. Returns the
/// session and the local path to continue to.
pub async fn finish(
    s: &Services,
    name: &str,
    answer: Callback,
    binding: Option<&str>,
    user_agent: Option<String>,
) -> Result<(SignedIn, String)> {
    let cfg = browser_provider(s, name)?;
    let state = answer
        .state
        .clone()
        .ok_or_else(|| Error::field("state", "the callback carries no state"))?;
    let now = time::format(s.clock.now());
    // The row is taken only by the browser that started it, for this
    // provider: anyone else who saw the callback's address (a log, a
    // Referer) is refused without ending that browser's sign-in.
    let binding_hash = binding.map(hash_secret);
    let provider = name.to_owned();
    let taken =
        s.db.write(move |c| {
            store::take(c, &state, &now, |l| {
                l.provider == provider
                    && binding_hash
                        .as_deref()
                        .is_some_and(|h| hashes_match(h, &l.binding_hash))
            })
        })
        .await?;
    let login = match taken {
        store::Taken::Login(login) => login,
        store::Taken::Missing => {
            return Err(binding_refused(
                "it is unknown, older than 10 minutes, or already used",
            ));
        }
        store::Taken::Refused(login) if login.provider != name => {
            return Err(binding_refused("it was started with another provider"));
        }
        store::Taken::Refused(_) => {
            return Err(binding_refused(
                "it was started in another browser, or another sign-in finished in this browser since (its binding cookie is missing or different); start again",
            ));
        }
    };
    if let Some(error) = &answer.error {
        // "access_denied (The user cancelled)", or the code alone.
        let description = answer
            .error_description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| format!(" ({})", truncate(d, 200)))
            .unwrap_or_default();
        return Err(Error::new(
            Code::AuthRequired,
            format!(
                "the identity provider did not sign you in: {}{description}",
                truncate(error, 64),
            ),
        )
        // RFC 6749 §4.1.2.1 code, e.g. access_denied when the person cancelled.
        .with_detail("provider_error", truncate(error, 64)));
    }
    let issuer = s.oidc.issuer(name, cfg).await?;
    if let Some(iss) = &answer.iss
        && iss != issuer.metadata.issuer().as_str()
    {
        return Err(binding_refused(
            "the answer came from another issuer (RFC 9207 iss)",
        ));
    }
    let code = answer
        .code
        .as_deref()
        .ok_or_else(|| Error::field("code", "the callback carries no authorization code"))?;
    let raw = exchange(s, name, cfg, &issuer, code, Some(login.pkce_verifier)).await?;
    let audiences = cfg.client_id.iter().cloned().collect::<Vec<_>>();
    let issuers = accepted_issuers(cfg, &issuer);
    let expect = Expect {
        issuers: &issuers,
        audiences: &audiences,
        nonce: NonceRule::Equals(&login.nonce),
        now: now_unix(s),
    };
    let claims = s.oidc.verify(name, issuer.clone(), &raw, &expect).await?;
    let apple_name = answer.user.as_deref().and_then(apple_user_name);
    let meta = SessionMeta {
        method: name.to_owned(),
        kind: SessionKind::Browser,
        client: None,
        user_agent,
    };
    let signed_in = signin::complete(s, identity(&issuer, claims, apple_name), meta).await?;
    Ok((signed_in, login.next))
}

/// Exchanges an authorization code at the provider's token endpoint; returns
/// the raw ID token.
async fn exchange(
    s: &Services,
    name: &str,
    cfg: &ProviderConfig,
    issuer: &Issuer,
    code: &str,
    pkce_verifier: Option<String>,
) -> Result<String> {
    let client = client(s, name, cfg, issuer)?;
    let mut request = client
        .exchange_code(AuthorizationCode::new(code.to_owned()))
        .map_err(|_| {
            unavailable(
                name,
                &cfg.issuer_url(),
                "the discovery document names no token endpoint".into(),
            )
        })?;
    if let Some(v) = pkce_verifier {
        request = request.set_pkce_verifier(PkceCodeVerifier::new(v));
    }
    let response = request
        .request_async(s.oidc.http()?)
        .await
        .map_err(|e| match e {
            RequestTokenError::ServerResponse(r) => Error::new(
                Code::InvalidIdToken,
                format!("the identity provider refused the authorization code ({r})"),
            ),
            // It answered, with a token response hds cannot read (a claim of
            // the ID token in a type the standard does not give it): trying
            // again would get the same. The parser's words name the claim;
            // the body (tokens) is not repeated.
            // Only a JSON answer whose values are of the wrong type: an HTML
            // error page of a proxy in front of the provider (a 502 or 503)
            // is not JSON at all, and a JSON answer without a token is no
            // token response; both are an outage, to try again.
            RequestTokenError::Parse(e, _)
                if e.inner().is_data()
                    && !e.inner().to_string().starts_with("missing field") =>
            {
                Error::new(
                    Code::InvalidIdToken,
                    format!(
                        "the identity provider's token response could not be read ({}): ask its administrator to send the ID token's claims in their standard types",
                        truncate(&e.inner().to_string(), 200)
                    ),
                )
            }
            other => unavailable(
                name,
                &cfg.issuer_url(),
                format!("token endpoint: {other:#}"),
            ),
        })?;
    // The access token is not kept: everything hds needs is in the ID token.
    response.id_token().map(|t| t.to_string()).ok_or_else(|| {
        Error::new(
            Code::InvalidIdToken,
            "the identity provider's token response carries no ID token (is the openid scope allowed?)",
        )
    })
}

/// Apple's `user` form field: the name, sent on the first sign-in only.
fn apple_user_name(user: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(user).ok()?;
    let part = |k: &str| {
        v["name"][k]
            .as_str()
            .map(str::trim)
            .filter(|p| !p.is_empty())
    };
    let full = [part("firstName"), part("lastName")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    (!full.is_empty()).then(|| truncate(&full, 200).to_owned())
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A native-flow challenge: a single-attempt nonce for this provider.
pub async fn challenge(s: &Services, name: &str) -> Result<(String, String)> {
    provider(s, name)?;
    signin::issue_nonce(s, name).await
}

/// Who is signing in from an app, for the session record.
pub struct AppClient {
    /// `X-Service-Client`.
    pub client: Option<String>,
    pub user_agent: Option<String>,
}

/// The native exchange: spends the nonce first (one attempt per nonce), then
/// verifies the app's ID token — signature from the issuer's JWKS, `iss`
/// (both of Google's spellings), `aud` among the configured client ids,
/// `exp`/`iat`, and the nonce (Apple: raw or SHA-256 hex) — and opens a
/// bearer session.
pub async fn native(
    s: &Services,
    name: &str,
    raw_id_token: &str,
    nonce: &str,
    app: AppClient,
) -> Result<SignedIn> {
    let cfg = provider(s, name)?;
    signin::consume_nonce(s, name, nonce).await?;
    let issuer = s.oidc.issuer(name, cfg).await?;
    let rule = match cfg.kind {
        ProviderKind::Apple => NonceRule::EqualsOrSha256Hex(nonce),
        _ => NonceRule::Equals(nonce),
    };
    let (issuers, audiences) = (accepted_issuers(cfg, &issuer), cfg.audiences());
    let expect = Expect {
        issuers: &issuers,
        audiences: &audiences,
        nonce: rule,
        now: now_unix(s),
    };
    let claims = s
        .oidc
        .verify(name, issuer.clone(), raw_id_token, &expect)
        .await?;
    bearer_session(s, name, identity(&issuer, claims, None), app).await
}

/// Apple's web-flow code sent by an Android app: exchanged at Apple's token
/// endpoint with our callback as redirect URI (the one the app's web flow
/// used), then treated like a native ID token. The nonce, when the app used
/// one, is spent and checked.
pub async fn apple_code(
    s: &Services,
    name: &str,
    code: &str,
    nonce: Option<&str>,
    app: AppClient,
) -> Result<SignedIn> {
    let cfg = provider(s, name)?;
    if cfg.kind != ProviderKind::Apple {
        return Err(Error::new(
            Code::ProviderNotFound,
            format!("provider {name} is not an Apple provider; the code exchange is Apple's"),
        ));
    }
    if let Some(n) = nonce {
        signin::consume_nonce(s, name, n).await?;
    }
    let issuer = s.oidc.issuer(name, cfg).await?;
    let raw = exchange(s, name, cfg, &issuer, code, None).await?;
    let (issuers, audiences) = (accepted_issuers(cfg, &issuer), cfg.audiences());
    let expect = Expect {
        issuers: &issuers,
        audiences: &audiences,
        nonce: nonce.map_or(NonceRule::Unchecked, NonceRule::EqualsOrSha256Hex),
        now: now_unix(s),
    };
    let claims = s.oidc.verify(name, issuer.clone(), &raw, &expect).await?;
    bearer_session(s, name, identity(&issuer, claims, None), app).await
}

async fn bearer_session(
    s: &Services,
    name: &str,
    id: Identity,
    app: AppClient,
) -> Result<SignedIn> {
    let meta = SessionMeta {
        method: name.to_owned(),
        kind: SessionKind::Bearer,
        client: app.client,
        user_agent: app.user_agent,
    };
    signin::complete(s, id, meta).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_name_is_shown_as_one_line() {
        assert_eq!(super::shown_name("Ann  Lee").as_deref(), Some("Ann Lee"));
        assert_eq!(
            super::shown_name("Mallory\n\u{202e}nimda").as_deref(),
            Some("Mallory nimda")
        );
        assert_eq!(super::shown_name(" \t\u{2066} "), None);
        assert_eq!(
            super::shown_name(&"x".repeat(300)).map(|n| n.len()),
            Some(100)
        );
    }

    #[test]
    fn apple_user_field_gives_the_name() {
        let user = r#"{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"a@example.com"}"#;
        assert_eq!(apple_user_name(user).as_deref(), Some("Ada Lovelace"));
        assert_eq!(apple_user_name(r#"{"email":"a@example.com"}"#), None);
        assert_eq!(apple_user_name("not json"), None);
    }

    #[test]
    fn only_issued_looking_bindings_are_reused() {
        assert!(plausible_binding(&credentials::new_secret()));
        assert!(!plausible_binding("short"));
        assert!(!plausible_binding(&"a;b".repeat(20)));
    }
}
