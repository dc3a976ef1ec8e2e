//! The models a provider serves, for model pickers (ACP's `model` option; the TUI's `/model`
//! can ask the same way). A listing takes a network round trip, too slow for a client that
//! picks a model right after `session/new`, so the last one is cached per server under
//! `$CORVID_HOME/cache/` and answered at once; the fresh one replaces it when it arrives.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_protocol::{ErrorInfo, ErrorKind, ReasoningEffort};
use corvid_providers::Provider;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

/// The folder under `$CORVID_HOME` holding caches.
pub const CACHE_DIR: &str = "cache";
/// How long a listing may take before it is given up (a server that never answers must not
/// keep a task alive).
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// A cache file bigger than this is not read (it is corvid's own file, but a picker must not
/// stall on a damaged one).
const MAX_CACHE_BYTES: u64 = 1 << 20;
/// Model ids kept from a listing, and their length; longer lists and names are cut.
const MAX_MODELS: usize = 2_000;
const MAX_MODEL_CHARS: usize = 200;

/// A provider's model listing with its on-disk cache.
#[derive(Clone)]
pub struct ModelListing {
    provider: Arc<dyn Provider>,
    /// `None` when there is no `$CORVID_HOME`: nothing is cached.
    cache_file: Option<PathBuf>,
}

/// What a picker can show now.
#[derive(Debug)]
pub struct CurrentModels {
    /// The models to offer now (cached or fresh); empty when none is known yet.
    pub models: Vec<String>,
    /// The fresh listing still on its way when `models` is not it. Its answer is what the
    /// picker shows next; dropping the handle lets the fetch finish (and cache) on its own.
    pub later: Option<JoinHandle<Result<Vec<String>, ErrorInfo>>>,
}

/// The cache file's content.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cached {
    provider: String,
    models: Vec<String>,
}

impl ModelListing {
    /// The listing of `provider`, cached under `corvid_home` (nothing is cached without one).
    pub fn new(provider: Arc<dyn Provider>, corvid_home: Option<&Path>) -> Self {
        let cache_file = corvid_home.map(|home| {
            home.join(CACHE_DIR)
                .join(format!("models-{}.json", cache_key(provider.as_ref())))
        });
        Self {
            provider,
            cache_file,
        }
    }

    /// The last listing written to the cache; `None` when there is none (or it is unreadable).
    pub fn cached(&self) -> Option<Vec<String>> {
        let path = self.cache_file.as_ref()?;
        let file = std::fs::File::open(path).ok()?;
        if file.metadata().ok()?.len() > MAX_CACHE_BYTES {
            tracing::warn!(path = %path.display(), "the model list cache is too large; ignored");
            return None;
        }
        match serde_json::from_reader::<_, Cached>(std::io::BufReader::new(file)) {
            Ok(cached) if !cached.models.is_empty() => Some(bounded(cached.models)),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable model list cache; ignored");
                None
            }
        }
    }

    /// Asks the provider (within a bounded time) and caches a non-empty answer, replacing
    /// the file atomically: a crash leaves the old listing or the new one.
    pub async fn fetch(&self) -> Result<Vec<String>, ErrorInfo> {
        let listing = self.provider.list_models();
        let models = match tokio::time::timeout(FETCH_TIMEOUT, listing).await {
            Ok(answer) => bounded(answer?),
            Err(_) => {
                return Err(ErrorInfo::new(
                    ErrorKind::Network,
                    format!(
                        "the provider did not list its models within {} s",
                        FETCH_TIMEOUT.as_secs()
                    ),
                ));
            }
        };
        if let (Some(path), false) = (&self.cache_file, models.is_empty()) {
            let cached = Cached {
                provider: self.provider.name().to_owned(),
                models: models.clone(),
            };
            if let Err(e) = write_atomically(path, &cached) {
                tracing::warn!(path = %path.display(), error = %e, "could not cache the model list");
            }
        }
        Ok(models)
    }

    /// What a picker that must answer now shows: the cached listing at once when there is
    /// one (the fresh one follows in [`CurrentModels::later`]); without a cache, the fresh
    /// listing if it arrives within `wait`, else nothing yet and the listing in `later`.
    pub async fn current(&self, wait: Duration) -> CurrentModels {
        let this = self.clone();
        let mut fetch = tokio::spawn(async move { this.fetch().await });
        if let Some(models) = self.cached() {
            return CurrentModels {
                models,
                later: Some(fetch),
            };
        }
        match tokio::time::timeout(wait, &mut fetch).await {
            Ok(Ok(Ok(models))) => CurrentModels {
                models,
                later: None,
            },
            Ok(Ok(Err(e))) => {
                tracing::debug!(error = %e, "the provider did not list its models");
                CurrentModels {
                    models: Vec::new(),
                    later: None,
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the model listing task failed");
                CurrentModels {
                    models: Vec::new(),
                    later: None,
                }
            }
            Err(_) => CurrentModels {
                models: Vec::new(),
                later: Some(fetch),
            },
        }
    }
}

/// `<provider name>-<hash of its endpoint>`: one cache per server, without the URL itself in
/// the file name (it may hold a gateway's path secrets).
fn cache_key(provider: &dyn Provider) -> String {
    let name: String = provider
        .name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let endpoint = provider.endpoint().unwrap_or_default();
    format!("{name}-{:08x}", fnv1a(endpoint.as_bytes()) as u32)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// At most [`MAX_MODELS`] non-empty ids of at most [`MAX_MODEL_CHARS`] characters, without
/// repeats, in the server's order.
fn bounded(models: Vec<String>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for model in models {
        let model = model.trim();
        if model.is_empty()
            || model.chars().count() > MAX_MODEL_CHARS
            || kept.iter().any(|m| m == model)
        {
            continue;
        }
        kept.push(model.to_owned());
        if kept.len() == MAX_MODELS {
            break;
        }
    }
    kept
}

fn write_atomically(path: &Path, cached: &Cached) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut tmp, cached)?;
    tmp.write_all(b"\n")?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The reasoning effort of a session's provider, for pickers (the TUI's `/model NAME
/// EFFORT`, ACP's `reasoning_effort` option): which efforts a model takes, and the current one.
#[derive(Clone)]
pub struct Efforts(Arc<dyn Provider>);

impl Efforts {
    /// The efforts of `provider` (the session's main one).
    pub fn new(provider: Arc<dyn Provider>) -> Self {
        Self(provider)
    }

    /// The efforts `model` takes; empty when it takes none (the picker is not offered then).
    pub fn for_model(&self, model: &str) -> &'static [ReasoningEffort] {
        self.0.reasoning_efforts(model)
    }

    /// The effort later requests ask for; `None`: the server's default.
    pub fn current(&self) -> Option<ReasoningEffort> {
        self.0.reasoning_effort()
    }
}

/// What `/model ARGS` asks for: nothing (show the model), a model, an effort, or both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelChoice {
    pub model: Option<String>,
    pub effort: Option<ReasoningEffort>,
}

impl ModelChoice {
    /// Reads `/model`'s arguments: `NAME`, `NAME EFFORT` or `EFFORT` alone (an effort word
    /// such as `high` is never taken for a model name).
    pub fn parse(args: &str) -> Result<Self, String> {
        let words: Vec<&str> = args.split_whitespace().collect();
        let effort = |word: &str| {
            ReasoningEffort::parse(word).ok_or_else(|| {
                format!(
                    "unknown reasoning effort `{word}`: use minimal, low, medium, high or xhigh"
                )
            })
        };
        match words.as_slice() {
            [] => Ok(Self::default()),
            [word] => Ok(match ReasoningEffort::parse(word) {
                Some(effort) => Self {
                    model: None,
                    effort: Some(effort),
                },
                None => Self {
                    model: Some((*word).to_owned()),
                    effort: None,
                },
            }),
            [model, word] => Ok(Self {
                model: Some((*model).to_owned()),
                effort: Some(effort(word)?),
            }),
            _ => Err("use /model NAME [EFFORT], or /model EFFORT".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use corvid_protocol::{Completion, ModelRequest};
    use corvid_providers::EventStream;
    use futures::FutureExt;
    use futures::future::BoxFuture;
    use pretty_assertions::assert_eq;

    use super::*;

    /// Lists what it holds; `None` answers never.
    struct Lister(Mutex<Option<Result<Vec<String>, ErrorInfo>>>);

    impl Lister {
        fn answering(answer: Option<Result<Vec<&str>, ErrorInfo>>) -> Arc<Self> {
            let answer = answer.map(|r| r.map(|v| v.into_iter().map(String::from).collect()));
            Arc::new(Self(Mutex::new(answer)))
        }
    }

    impl Provider for Lister {
        fn name(&self) -> &str {
            "lister"
        }
        fn endpoint(&self) -> Option<String> {
            Some("http://127.0.0.1:1/v1/chat/completions".into())
        }
        fn stream(&self, _request: ModelRequest) -> EventStream {
            Box::pin(futures::stream::empty())
        }
        fn complete(&self, _: ModelRequest) -> BoxFuture<'static, Result<Completion, ErrorInfo>> {
            futures::future::pending().boxed()
        }
        fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ErrorInfo>> {
            match self.0.lock().unwrap().clone() {
                Some(answer) => futures::future::ready(answer).boxed(),
                None => futures::future::pending().boxed(),
            }
        }
    }

    #[tokio::test]
    async fn a_first_listing_is_waited_for_and_cached_for_the_next_picker() {
        let home = tempfile::tempdir().unwrap();
        let listing = ModelListing::new(
            Lister::answering(Some(Ok(vec!["a", "b", "a", " "]))),
            Some(home.path()),
        );
        let now = listing.current(Duration::from_secs(30)).await;
        assert_eq!(
            (now.models, now.later.is_none()),
            (vec!["a".to_owned(), "b".to_owned()], true)
        );

        // A later process whose server does not answer still offers the cached list at once.
        let silent = ModelListing::new(Lister::answering(None), Some(home.path()));
        let now = silent.current(Duration::from_secs(30)).await;
        assert_eq!(now.models, vec!["a", "b"]);
        assert!(now.later.is_some());
        let files: Vec<_> = std::fs::read_dir(home.path().join(CACHE_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(files[0].starts_with("models-lister-"), "{files:?}");
    }

    #[tokio::test]
    async fn a_failed_listing_keeps_the_cache_and_offers_nothing_new() {
        let home = tempfile::tempdir().unwrap();
        ModelListing::new(Lister::answering(Some(Ok(vec!["a"]))), Some(home.path()))
            .fetch()
            .await
            .unwrap();
        let failing = ModelListing::new(
            Lister::answering(Some(Err(ErrorInfo::new(ErrorKind::Server, "down")))),
            Some(home.path()),
        );
        assert!(failing.fetch().await.is_err());
        assert_eq!(failing.cached(), Some(vec!["a".to_owned()]));
        // Without a home nothing is cached, and a failure offers nothing.
        let homeless = ModelListing::new(
            Lister::answering(Some(Err(ErrorInfo::new(ErrorKind::Server, "down")))),
            None,
        );
        let now = homeless.current(Duration::from_secs(30)).await;
        assert_eq!(
            (now.models, now.later.is_none()),
            (Vec::<String>::new(), true)
        );
    }

    #[test]
    fn model_arguments_name_a_model_an_effort_or_both() {
        let parse = |args: &str| ModelChoice::parse(args);
        assert_eq!(parse(""), Ok(ModelChoice::default()));
        assert_eq!(
            parse("gpt-5 high"),
            Ok(ModelChoice {
                model: Some("gpt-5".into()),
                effort: Some(ReasoningEffort::High)
            })
        );
        assert_eq!(
            parse(" xhigh "),
            Ok(ModelChoice {
                model: None,
                effort: Some(ReasoningEffort::Xhigh)
            })
        );
        assert_eq!(
            parse("gemini-2.5-pro"),
            Ok(ModelChoice {
                model: Some("gemini-2.5-pro".into()),
                effort: None
            })
        );
        assert!(parse("gpt-5 max").unwrap_err().contains("`max`"));
        assert!(parse("a b c").is_err());
    }
}
