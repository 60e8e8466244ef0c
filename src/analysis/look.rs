//! What an exchange came to, and whether a person should look at it: decided here, once,
//! for every format that lists exchanges. Its outcome is known when it completes (from its
//! [`Outcome`] and, when answered, the response's error code and block); whether it was
//! slow only at the end, once the threshold is (`Analysis::slow_threshold_us`).

use crate::kafka::tables::ErrorCode;
use crate::pairing::Outcome;

/// What an exchange came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gist {
    /// A NONE response granting the ids `start..=end`.
    Granted {
        start: i64,
        end: i64,
    },
    /// A NONE response whose start or length is no block (or was not read).
    NoBlock,
    /// A response with an error code other than NONE.
    Error(ErrorCode),
    /// A response whose error code was not read.
    Undecoded,
    Unanswered,
    ResponseUnknown,
}

impl Gist {
    pub fn of(outcome: &Outcome) -> Self {
        let response = match outcome {
            Outcome::Complete { response, .. } => response,
            Outcome::Unanswered => return Self::Unanswered,
            Outcome::ResponseUnknown => return Self::ResponseUnknown,
        };
        match response.error_code {
            Some(ErrorCode::NONE) => {
                // the analysis's rule: a start of 0 or more, a length above 0, and an
                // end within the largest producer id
                let block = match (response.producer_id_start, response.producer_id_len) {
                    (Some(start), Some(len)) if start >= 0 && len > 0 => start
                        .checked_add(i64::from(len) - 1)
                        .map(|end| Self::Granted { start, end }),
                    _ => None,
                };
                block.unwrap_or(Self::NoBlock)
            }
            Some(code) => Self::Error(code),
            None => Self::Undecoded,
        }
    }

    /// Its words in a listing of exchanges.
    pub fn words(&self) -> String {
        match self {
            Self::Granted { start, end } => format!("NONE ids {start}..={end}"),
            Self::NoBlock => "NONE (no block)".to_owned(),
            Self::Error(code) => code.name(),
            Self::Undecoded => "undecoded".to_owned(),
            Self::Unanswered => "unanswered".to_owned(),
            Self::ResponseUnknown => "response unknown (bytes lost)".to_owned(),
        }
    }
}

/// Why an exchange is worth a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// It failed: an error response, one whose error code was not read, no answer, or an
    /// answer the capture may have lost.
    Failed,
    /// A NONE response that grants no block.
    NoBlock,
    /// Answered slower than the threshold.
    Slow,
}

impl Gist {
    /// Why it is worth a look whatever its latency: every outcome but a block granted.
    pub fn trouble(&self) -> Option<Why> {
        match self {
            Self::Granted { .. } => None,
            Self::NoBlock => Some(Why::NoBlock),
            Self::Error(_) | Self::Undecoded | Self::Unanswered | Self::ResponseUnknown => {
                Some(Why::Failed)
            }
        }
    }
}

/// Why an exchange in `trouble` (or none), answered after `latency_us`, is worth a look
/// once the slow threshold is known; `None` when it is not.
pub fn worth_a_look(
    trouble: Option<Why>,
    latency_us: Option<f64>,
    slow_threshold_us: Option<f64>,
) -> Option<Why> {
    let slow = matches!((latency_us, slow_threshold_us), (Some(l), Some(t)) if l > t);
    trouble.or(slow.then_some(Why::Slow))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trouble_comes_first_then_slowness() {
        let granted = Gist::Granted { start: 0, end: 999 };
        assert_eq!(worth_a_look(granted.trouble(), Some(5.0), Some(10.0)), None);
        assert_eq!(
            worth_a_look(granted.trouble(), Some(11.0), Some(10.0)),
            Some(Why::Slow)
        );
        // at the threshold is not above it; without a threshold nothing is slow
        assert_eq!(
            worth_a_look(granted.trouble(), Some(10.0), Some(10.0)),
            None
        );
        assert_eq!(worth_a_look(granted.trouble(), Some(1e9), None), None);
        assert_eq!(
            worth_a_look(Gist::NoBlock.trouble(), None, None),
            Some(Why::NoBlock)
        );
        let unanswered = Gist::Unanswered.trouble();
        assert_eq!(
            worth_a_look(unanswered, Some(11.0), Some(10.0)),
            Some(Why::Failed)
        );
    }
}
