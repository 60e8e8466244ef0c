//! What an exchange came to, in the words the text and HTML reports list it with: from
//! its [`Outcome`] and, when answered, the response's error code and block.

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
