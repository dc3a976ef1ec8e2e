//! One fetch: every hop checked by the guard, connected only to the checked addresses,
//! redirects followed by hand, the body read up to a cap.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::guard::{CheckedHop, Guard};

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// The most bytes of a body read; the rest is never downloaded.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// The whole fetch (every hop, every byte) must finish within this.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A fetched body and what the server said it is.
#[derive(Debug)]
pub struct Fetched {
    /// The URL of the last hop (after redirects and the https upgrade).
    pub url: Url,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// True when the body was longer than [`MAX_BODY_BYTES`] and reading stopped there.
    pub truncated: bool,
}

/// A resolver reqwest falls back to for a name without a checked address: it refuses, so a
/// connection can never be made to an address the guard did not check.
struct NoResolve;

impl reqwest::dns::Resolve for NoResolve {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_owned();
        Box::pin(
            async move { Err(format!("`{name}` was not checked by the web_fetch guard").into()) },
        )
    }
}

/// A client that reaches `hop.host` only at its checked addresses and follows nothing.
fn client_for(hop: &CheckedHop) -> Result<reqwest::Client, String> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one meanwhile; either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let addrs: Vec<SocketAddr> = hop.addrs.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve the name itself, past the guard.
        .no_proxy()
        .dns_resolver(Arc::new(NoResolve))
        .resolve_to_addrs(&hop.host, &addrs)
        .user_agent(concat!("corvid/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("could not set up the HTTP client: {e}"))
}

/// Fetches `url`, checking every hop; errors say which rule refused or what failed.
pub async fn fetch(guard: &Guard, url: Url) -> Result<Fetched, String> {
    match tokio::time::timeout(TIMEOUT, fetch_hops(guard, url)).await {
        Ok(result) => result,
        Err(_) => Err(format!("timed out after {} s", TIMEOUT.as_secs())),
    }
}

async fn fetch_hops(guard: &Guard, mut url: Url) -> Result<Fetched, String> {
    for hop in 0..=MAX_REDIRECTS {
        let checked = guard.check(url).await?;
        let client = client_for(&checked)?;
        let mut response = client
            .get(checked.url.clone())
            .send()
            .await
            .map_err(|e| format!("fetching {} failed: {e}", checked.url))?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            if hop == MAX_REDIRECTS {
                return Err(format!(
                    "refused: more than {MAX_REDIRECTS} redirects (the last went to {})",
                    String::from_utf8_lossy(location.as_bytes())
                ));
            }
            let location = location
                .to_str()
                .map_err(|_| "the redirect's Location header is not text".to_owned())?;
            url = checked
                .url
                .join(location)
                .map_err(|e| format!("the redirect to `{location}` is not a URL: {e}"))?;
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading {} failed: {e}", checked.url))?
        {
            let room = MAX_BODY_BYTES - body.len();
            if chunk.len() >= room {
                body.extend_from_slice(&chunk[..room]);
                truncated = chunk.len() > room;
                if !truncated {
                    truncated = response.chunk().await.ok().flatten().is_some();
                }
                break;
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Fetched {
            url: checked.url,
            status: status.as_u16(),
            content_type,
            body,
            truncated,
        });
    }
    Err(format!("refused: more than {MAX_REDIRECTS} redirects"))
}
