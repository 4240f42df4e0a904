//! The provider cache: each provider's discovery document and JWKS, fetched
//! through reqwest and kept in memory, and ID-token verification against
//! them with one JWKS refetch when the issuer has rotated its keys.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use openidconnect::core::{CoreJsonWebKeySet, CoreProviderMetadata};
use openidconnect::{AsyncHttpClient, HttpRequest, HttpResponse, IssuerUrl};

use super::id_token::{self, Expect, Refusal};
use crate::config::ProviderConfig;
use crate::error::{Code, Error, Result};

/// Discovery documents and JWKS are re-read after this long.
const METADATA_TTL: Duration = Duration::from_secs(3600);
/// A token signed by an unknown key refetches the JWKS, at most this often
/// (so forged `kid`s cannot turn hds into a load generator against the issuer).
const JWKS_REFETCH_MIN_INTERVAL: Duration = Duration::from_secs(5);
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-process cache of each provider's discovery document and JWKS. One
/// lives in `Services`; cheap to share.
#[derive(Default)]
pub struct Providers {
    http: OnceLock<std::result::Result<Http, String>>,
    issuers: RwLock<HashMap<String, Arc<Issuer>>>,
}

pub(super) struct Issuer {
    pub(super) metadata: CoreProviderMetadata,
    fetched_at: Instant,
    jwks_refetched_at: Option<Instant>,
}

/// reqwest 0.13 behind openidconnect's HTTP trait (the crate's own `reqwest`
/// feature would pull in reqwest 0.12). Redirects are not followed: a
/// discovery or token endpoint that redirects is refused rather than letting
/// it point hds at another host (openidconnect's UPGRADE.md, SSRF).
#[derive(Clone)]
pub(super) struct Http(reqwest::Client);

impl<'c> AsyncHttpClient<'c> for Http {
    type Error = reqwest::Error;
    type Future = Pin<
        Box<dyn Future<Output = std::result::Result<HttpResponse, reqwest::Error>> + Send + 'c>,
    >;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let response = self.0.execute(reqwest::Request::try_from(request)?).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut out = HttpResponse::new(response.bytes().await?.to_vec());
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok(out)
        })
    }
}

impl Providers {
    pub(super) fn http(&self) -> Result<&Http> {
        let built = self.http.get_or_init(|| {
            // reqwest is built without a default TLS provider; installing ring
            // is a no-op when `main` already did.
            let _ = rustls::crypto::ring::default_provider().install_default();
            crate::outbound::build(
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(HTTP_TIMEOUT)
                    .user_agent(concat!("hds/", env!("CARGO_PKG_VERSION"))),
            )
            .map(Http)
        });
        built
            .as_ref()
            .map_err(|e| Error::internal(anyhow::anyhow!("building the HTTP client: {e}")))
    }

    /// The provider's discovery document and keys, from cache while fresh.
    pub(super) async fn issuer(&self, name: &str, cfg: &ProviderConfig) -> Result<Arc<Issuer>> {
        if let Some(found) = self.cached(name)
            && found.fetched_at.elapsed() < METADATA_TTL
        {
            return Ok(found);
        }
        let issuer_url = cfg.issuer_url();
        let url = IssuerUrl::new(issuer_url.clone()).map_err(|e| {
            unavailable(
                name,
                &issuer_url,
                format!("the configured issuer is not a URL: {e}"),
            )
        })?;
        let metadata = CoreProviderMetadata::discover_async(url, self.http()?)
            .await
            .map_err(|e| unavailable(name, &issuer_url, format!("{e:#}")))?;
        let fresh = Arc::new(Issuer {
            metadata,
            fetched_at: Instant::now(),
            jwks_refetched_at: None,
        });
        self.store(name, fresh.clone());
        Ok(fresh)
    }

    /// Re-reads the JWKS after a token named a key we do not have (the
    /// issuer rotated keys). None when a refetch happened moments ago.
    async fn refetch_jwks(&self, name: &str, current: &Issuer) -> Result<Option<Arc<Issuer>>> {
        if current
            .jwks_refetched_at
            .is_some_and(|at| at.elapsed() < JWKS_REFETCH_MIN_INTERVAL)
        {
            return Ok(None);
        }
        let jwks_uri = current.metadata.jwks_uri();
        let jwks = CoreJsonWebKeySet::fetch_async(jwks_uri, self.http()?)
            .await
            .map_err(|e| unavailable(name, jwks_uri.as_str(), format!("{e:#}")))?;
        let fresh = Arc::new(Issuer {
            metadata: current.metadata.clone().set_jwks(jwks),
            fetched_at: current.fetched_at,
            jwks_refetched_at: Some(Instant::now()),
        });
        self.store(name, fresh.clone());
        Ok(Some(fresh))
    }

    fn cached(&self, name: &str) -> Option<Arc<Issuer>> {
        // A poisoned lock only means another request panicked mid-insert; the
        // map itself is still whole.
        let map = self.issuers.read().unwrap_or_else(|p| p.into_inner());
        map.get(name).cloned()
    }

    fn store(&self, name: &str, issuer: Arc<Issuer>) {
        let mut map = self.issuers.write().unwrap_or_else(|p| p.into_inner());
        map.insert(name.to_owned(), issuer);
    }

    /// Verifies an ID token with the issuer's keys, refetching them once when
    /// the token names a key the cached set lacks.
    pub(super) async fn verify(
        &self,
        name: &str,
        issuer: Arc<Issuer>,
        raw: &str,
        expect: &Expect<'_>,
    ) -> Result<id_token::Claims> {
        let token = id_token::parse(raw).map_err(refused)?;
        match token.verify(issuer.metadata.jwks(), expect) {
            Err(Refusal::UnknownKey(kid)) => match self.refetch_jwks(name, &issuer).await? {
                Some(fresh) => token.verify(fresh.metadata.jwks(), expect).map_err(refused),
                None => Err(refused(Refusal::UnknownKey(kid))),
            },
            other => other.map_err(refused),
        }
    }
}

pub(super) fn unavailable(name: &str, url: &str, cause: String) -> Error {
    tracing::warn!(
        provider = name,
        url,
        error = cause,
        "identity provider unavailable"
    );
    Error::new(
        Code::ProviderUnavailable,
        format!(
            "the identity provider {name} ({url}) could not be reached or answered nonsense; try again shortly"
        ),
    )
}

fn refused(r: Refusal) -> Error {
    let message = match r {
        Refusal::UnknownKey(kid) => {
            format!("the ID token is signed with key {kid}, which the issuer does not publish")
        }
        Refusal::Invalid(m) => m,
    };
    Error::new(Code::InvalidIdToken, message)
}
