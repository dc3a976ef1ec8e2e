//! How a failing model request is retried (SPEC §3.4): exponential backoff with jitter,
//! or exactly what the server asked for with `retry-after`.

use std::time::Duration;

use corvid_protocol::ErrorInfo;
use rand::Rng;

/// How often and how patiently a failing model request is retried before giving up or
/// falling back to another model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per model, the first one included (0 behaves like 1).
    pub max_attempts: u32,
    /// The wait after the first failed attempt, doubled after each further failure.
    pub initial_delay: Duration,
    /// The longest computed wait (a server's `retry-after` is honoured as given).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// Spread of the jitter around the exponential delay, so clients that failed together do not
/// retry together.
const JITTER: f64 = 0.2;

impl RetryPolicy {
    /// The number of attempts one model gets, never less than one.
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }

    /// How long to wait after attempt number `failed_attempt` (1-based) failed with `error`.
    pub fn delay_after(&self, failed_attempt: u32, error: &ErrorInfo) -> Duration {
        if let Some(ms) = error.retry_after_ms {
            return Duration::from_millis(ms);
        }
        let doublings = failed_attempt.saturating_sub(1).min(20);
        let base = self
            .initial_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay);
        let factor = rand::rng().random_range((1.0 - JITTER)..=(1.0 + JITTER));
        Duration::try_from_secs_f64(base.as_secs_f64() * factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use corvid_protocol::ErrorKind;

    use super::*;

    #[test]
    fn retry_after_is_honoured_exactly() {
        let mut err = ErrorInfo::new(ErrorKind::RateLimited, "slow down");
        err.retry_after_ms = Some(1234);
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_after(3, &err), Duration::from_millis(1234));
    }

    #[test]
    fn backoff_grows_and_stays_under_the_cap() {
        let err = ErrorInfo::new(ErrorKind::Server, "boom");
        let policy = RetryPolicy::default();
        let first = policy.delay_after(1, &err);
        assert!(first >= Duration::from_millis(800) && first <= Duration::from_millis(1200));
        let third = policy.delay_after(3, &err);
        assert!(third >= Duration::from_millis(3200) && third <= Duration::from_millis(4800));
        assert!(policy.delay_after(30, &err) <= policy.max_delay);
    }

    #[test]
    fn an_enormous_configured_delay_does_not_overflow() {
        let err = ErrorInfo::new(ErrorKind::Server, "boom");
        let policy = RetryPolicy {
            max_attempts: 3,
            initial_delay: Duration::from_millis(u64::MAX),
            max_delay: Duration::from_millis(u64::MAX),
        };
        assert!(policy.delay_after(5, &err) <= policy.max_delay);
    }
}
