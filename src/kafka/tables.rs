//! Kafka's API keys and error codes, as open wire enums.
//!
//! Names and version ranges come from `src/kafka/data/*.tsv`, written by
//! `scripts/kafka/gen-tables` from the kafka-clients jars of the releases it has merged (a
//! union: every version some release may send), parsed once on first use. A test keeps
//! them never narrower than `shared/kafka/*.tsv` (Kafka's up to 4.1). Values Kafka does
//! not define render as `Unknown(n)` / `UNKNOWN(n)`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

const API_KEYS_TSV: &str = include_str!("data/api_keys.tsv");
const ERRORS_TSV: &str = include_str!("data/errors.tsv");

/// Request versions above the table's newest that a newer Kafka release may send: in
/// recent releases an API gains at most two versions a year.
pub const FUTURE_VERSIONS: i16 = 4;

/// One row of `api_keys.tsv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiInfo {
    pub name: String,
    pub request_versions: RangeInclusive<i16>,
    /// First flexible request version, `None` when no version is flexible.
    pub request_flexible_from: Option<i16>,
}

/// A Kafka API key as found on the wire; may be one Kafka does not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiKey(pub i16);

impl ApiKey {
    pub const PRODUCE: Self = Self(0);
    pub const ALLOCATE_PRODUCER_IDS: Self = Self(67);
    pub const INIT_PRODUCER_ID: Self = Self(22);
    pub const END_TXN: Self = Self(26);
    pub const API_VERSIONS: Self = Self(18);

    pub fn info(self) -> Option<&'static ApiInfo> {
        let key = usize::try_from(self.0).ok()?;
        api_by_key().get(key).copied().flatten()
    }

    /// True when `version` is a request version Kafka defines for this key.
    pub fn accepts_request_version(self, version: i16) -> bool {
        self.info()
            .is_some_and(|info| info.request_versions.contains(&version))
    }

    /// True when a Kafka client may send `version` of this key: one the table knows, or
    /// up to [`FUTURE_VERSIONS`] above the highest, as a release newer than the table may.
    /// Recognising Kafka rests on this; decoding only on the versions we know.
    pub fn may_be_request_version(self, version: i16) -> bool {
        self.info().is_some_and(|info| {
            let newest = *info.request_versions.end();
            (0..=newest.saturating_add(FUTURE_VERSIONS)).contains(&version)
        })
    }

    /// Whether `version` may be sent (see [`Self::may_be_request_version`]: a newer
    /// release's too) and is a flexible one (header v2, tagged fields; Kafka never makes a
    /// later version rigid again): no lookalike's first messages read as one (they read
    /// as old, rigid versions: ZooKeeper's as Produce v0 and v1, PostgreSQL's as Metadata
    /// v0).
    pub fn is_flexible_version(self, version: i16) -> bool {
        self.may_be_request_version(version)
            && self
                .info()
                .and_then(|info| info.request_flexible_from)
                .is_some_and(|from| version >= from)
    }

    /// The first flexible version of its requests (and responses), from Kafka's table;
    /// `Some(i16::MAX)` for an API with none, `None` for one the table does not list.
    pub fn flexible_from(self) -> Option<i16> {
        self.info()
            .map(|info| info.request_flexible_from.unwrap_or(i16::MAX))
    }

    /// AllocateProducerIds, InitProducerId and EndTxn: the messages producer ids travel in.
    pub fn carries_producer_ids(self) -> bool {
        matches!(
            self,
            Self::ALLOCATE_PRODUCER_IDS | Self::INIT_PRODUCER_ID | Self::END_TXN
        )
    }

    /// Kafka's name, or `Unknown(<key>)`.
    pub fn name(self) -> String {
        match self.info() {
            Some(info) => info.name.clone(),
            None => format!("Unknown({})", self.0),
        }
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A Kafka error code as found on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ErrorCode(pub i16);

impl ErrorCode {
    pub const NONE: Self = Self(0);
    /// A controller that is not the active one answers so.
    pub const NOT_CONTROLLER: Self = Self(41);

    /// Anything but NONE: the request failed.
    pub fn is_error(self) -> bool {
        self != Self::NONE
    }

    /// Kafka's name, or `UNKNOWN(<code>)` for codes Kafka does not define.
    pub fn name(self) -> String {
        match self.known_name() {
            Some(name) => name.to_owned(),
            None => format!("UNKNOWN({})", self.0),
        }
    }

    /// Kafka's name, when the project's table has the code.
    pub fn known_name(self) -> Option<&'static str> {
        match error_slot(self.0).and_then(|slot| error_by_code().get(slot)) {
            Some(name) => *name,
            // outside the codes the table spans: looked up all the same
            None => error_table().get(&self.0).copied(),
        }
    }

    /// Every name Kafka's table defines, by code: with `UNKNOWN(<code>)`, every name
    /// [`name`](Self::name) writes.
    pub fn names() -> Vec<&'static str> {
        let mut by_code: Vec<(&i16, &&'static str)> = error_table().iter().collect();
        by_code.sort();
        by_code.into_iter().map(|(_, name)| *name).collect()
    }
}

/// A Kafka error's name: one of the project's table, or `UNKNOWN(<code>)`.
pub fn error_name() -> serde_json::Value {
    serde_json::json!({
        "anyOf": [
            { "type": "string", "enum": ErrorCode::names() },
            { "type": "string", "pattern": "^UNKNOWN\\(-?[0-9]+\\)$" }
        ]
    })
}

/// Counts by Kafka error name: the schema of [`error_counts`].
pub fn error_counts_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let name = error_name();
    schemars::json_schema!({
        "type": "object",
        "propertyNames": name,
        "additionalProperties": { "type": "integer", "minimum": 0 }
    })
}

/// Counts by error code, written by error name (in the names' order).
pub fn error_counts<S: serde::Serializer>(
    counts: &BTreeMap<ErrorCode, u64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut named = BTreeMap::new();
    for (code, n) in counts {
        *named.entry(code.name()).or_insert(0_u64) += n;
    }
    serde::Serialize::serialize(&named, s)
}

#[expect(
    clippy::expect_used,
    reason = "the table is compiled in and a test parses it"
)]
fn api_table() -> &'static HashMap<i16, ApiInfo> {
    static TABLE: OnceLock<HashMap<i16, ApiInfo>> = OnceLock::new();
    TABLE.get_or_init(|| parse_api_keys(API_KEYS_TSV).expect("checked-in api_keys.tsv parses"))
}

/// The API table indexed by key: looked up for every request head and decoded message,
/// where hashing the key (SipHash) cost more than the rest of the lookup.
fn api_by_key() -> &'static [Option<&'static ApiInfo>] {
    static BY_KEY: OnceLock<Vec<Option<&'static ApiInfo>>> = OnceLock::new();
    BY_KEY.get_or_init(|| {
        let table = api_table();
        let keys = table.keys().filter_map(|key| usize::try_from(*key).ok());
        let mut by_key = vec![None; keys.max().map_or(0, |max| max + 1)];
        for (key, info) in table {
            let slot = usize::try_from(*key)
                .ok()
                .and_then(|key| by_key.get_mut(key));
            if let Some(slot) = slot {
                *slot = Some(info);
            }
        }
        by_key
    })
}

#[expect(
    clippy::expect_used,
    reason = "the table is compiled in and a test parses it"
)]
fn error_table() -> &'static HashMap<i16, &'static str> {
    static TABLE: OnceLock<HashMap<i16, &'static str>> = OnceLock::new();
    TABLE.get_or_init(|| parse_errors(ERRORS_TSV).expect("checked-in errors.tsv parses"))
}

/// The error table indexed by [`error_slot`]: looked up for every decoded response's
/// error code, where hashing the code (SipHash) cost more than the rest of the lookup.
fn error_by_code() -> &'static [Option<&'static str>] {
    static BY_CODE: OnceLock<Vec<Option<&'static str>>> = OnceLock::new();
    BY_CODE.get_or_init(|| {
        let table = error_table();
        let len = table.keys().filter_map(|code| error_slot(*code)).max();
        let mut by_code = vec![None; len.map_or(0, |max| max + 1)];
        for (code, name) in table {
            if let Some(slot) = error_slot(*code).and_then(|slot| by_code.get_mut(slot)) {
                *slot = Some(*name);
            }
        }
        by_code
    })
}

/// Where a code sits in [`error_by_code`]: Kafka's codes run from -1 up.
fn error_slot(code: i16) -> Option<usize> {
    usize::try_from(i32::from(code) + 1).ok()
}

fn data_lines(tsv: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    tsv.lines()
        .enumerate()
        .filter(|(_, line)| !line.starts_with('#') && !line.trim().is_empty())
        .map(|(idx, line)| (idx + 1, line.split('\t').collect()))
}

fn parse_range(text: &str) -> Option<RangeInclusive<i16>> {
    match text.split_once('-') {
        Some((lo, hi)) => Some(lo.parse().ok()?..=hi.parse().ok()?),
        None => {
            let v = text.parse().ok()?;
            Some(v..=v)
        }
    }
}

fn parse_flexible(text: &str) -> Option<Option<i16>> {
    if text == "none" {
        return Some(None);
    }
    Some(Some(text.strip_suffix('+')?.parse().ok()?))
}

fn parse_api_keys(tsv: &str) -> Result<HashMap<i16, ApiInfo>, String> {
    let mut table = HashMap::new();
    for (line_no, cols) in data_lines(tsv) {
        if cols.first() == Some(&"api_key") {
            continue; // column names
        }
        let bad = || format!("api_keys.tsv line {line_no} is malformed");
        let [key, name, req_versions, req_flexible, ..] = cols.as_slice() else {
            return Err(bad());
        };
        let info = ApiInfo {
            name: (*name).to_owned(),
            request_versions: parse_range(req_versions).ok_or_else(bad)?,
            request_flexible_from: parse_flexible(req_flexible).ok_or_else(bad)?,
        };
        table.insert(key.parse().map_err(|_| bad())?, info);
    }
    Ok(table)
}

fn parse_errors(tsv: &'static str) -> Result<HashMap<i16, &'static str>, String> {
    let mut table = HashMap::new();
    for (line_no, cols) in data_lines(tsv) {
        let [code, name] = cols.as_slice() else {
            return Err(format!("errors.tsv line {line_no} is malformed"));
        };
        let code = code
            .parse()
            .map_err(|_| format!("errors.tsv line {line_no} has a bad code"))?;
        table.insert(code, *name);
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_known_and_unknown_api_keys() {
        assert_eq!(ApiKey(67).name(), "AllocateProducerIds");
        assert_eq!(ApiKey(0).name(), "Produce");
        assert_eq!(ApiKey(123).name(), "Unknown(123)");
        assert_eq!(ApiKey(-1).name(), "Unknown(-1)");
    }

    #[test]
    fn version_ranges_come_from_the_table() {
        assert!(ApiKey(67).accepts_request_version(0));
        assert!(!ApiKey(67).accepts_request_version(1));
        // Kafka 4.1 sends Produce v13; no release defines v14.
        assert!(ApiKey(0).accepts_request_version(13));
        assert!(!ApiKey(0).accepts_request_version(14));
        assert_eq!(
            ApiKey(17).info().map(|i| i.request_flexible_from),
            Some(None)
        );
        assert_eq!(
            ApiKey(1).info().map(|i| i.request_flexible_from),
            Some(Some(12))
        );
        assert!(!ApiKey(500).accepts_request_version(0));
    }

    #[test]
    fn a_newer_release_may_send_a_few_versions_more() {
        assert!(ApiKey(67).may_be_request_version(1));
        assert!(ApiKey(67).may_be_request_version(FUTURE_VERSIONS));
        assert!(!ApiKey(67).may_be_request_version(FUTURE_VERSIONS + 1));
        assert!(ApiKey(0).may_be_request_version(13 + FUTURE_VERSIONS));
        assert!(!ApiKey(0).may_be_request_version(-1));
        assert!(!ApiKey(1000).may_be_request_version(0));
    }

    #[test]
    fn names_error_codes() {
        assert_eq!(ErrorCode(0).name(), "NONE");
        assert_eq!(ErrorCode(-1).name(), "UNKNOWN_SERVER_ERROR");
        assert_eq!(ErrorCode(41).name(), "NOT_CONTROLLER");
        assert_eq!(ErrorCode(77).name(), "STALE_BROKER_EPOCH");
        assert_eq!(ErrorCode(133).name(), "SHARE_SESSION_LIMIT_REACHED");
        assert_eq!(ErrorCode(9999).name(), "UNKNOWN(9999)");
    }

    #[test]
    fn every_table_row_parses() {
        // Kafka 4.1 added keys 90-92 to trunk's 88 of October 2024; 4.4.0 has 88, 89,
        // 93 and 94 besides.
        assert_eq!(api_table().len(), 95);
        assert_eq!(ApiKey(92).name(), "DeleteShareGroupOffsets");
        assert_eq!(ApiKey(94).name(), "UnregisterController");
        assert_eq!(ErrorCode(136).name(), "CONTROLLER_ID_NOT_REGISTERED");
        assert!(error_table().len() > 120);
    }

    /// The project's tables may be newer than the shared ones (Kafka's up to 4.1), never
    /// narrower: every shared API is ours under its name, with every version it lists and
    /// the same first flexible version; every shared error code is ours under its name.
    #[test]
    fn tables_are_never_narrower_than_the_shared_copies() {
        let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/kafka");
        if !shared.exists() {
            return; // building outside the project workspace
        }
        let rows = |name: &str| -> Vec<Vec<String>> {
            std::fs::read_to_string(shared.join(name))
                .expect("shared tsv readable")
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("api_key") && !l.is_empty())
                .map(|l| l.split('\t').map(str::to_owned).collect())
                .collect()
        };
        let range = |r: &str| -> (i16, i16) {
            let (a, b) = r.split_once('-').unwrap_or((r, r));
            (a.parse().unwrap(), b.parse().unwrap())
        };
        let apis = rows("api_keys.tsv");
        assert!(apis.len() > 80);
        for row in apis {
            let key: i16 = row[0].parse().unwrap();
            let ours = ApiKey(key)
                .info()
                .unwrap_or_else(|| panic!("API {key} missing"));
            assert_eq!(ours.name, row[1], "API {key}");
            let (low, high) = range(&row[2]);
            assert!(
                ours.request_versions.contains(&low) && ours.request_versions.contains(&high),
                "API {key}: ours {:?}, shared {low}-{high}",
                ours.request_versions
            );
            let flexible = row[3].strip_suffix('+').map(|v| v.parse::<i16>().unwrap());
            assert_eq!(ours.request_flexible_from, flexible, "API {key}");
        }
        let errors = rows("errors.tsv");
        assert!(errors.len() > 100);
        for row in errors {
            let code: i16 = row[0].parse().unwrap();
            assert_eq!(ErrorCode(code).name(), row[1], "error {code}");
        }
    }

    #[test]
    fn the_index_by_key_finds_what_the_table_holds_and_nothing_else() {
        for key in (-3..=300).chain([i16::MIN, i16::MAX]) {
            assert_eq!(ApiKey(key).info(), api_table().get(&key), "key {key}");
        }
    }

    #[test]
    fn the_index_by_code_finds_what_the_table_holds_and_nothing_else() {
        for code in (-3..=300).chain([i16::MIN, i16::MAX]) {
            let expected = error_table().get(&code).copied();
            assert_eq!(ErrorCode(code).known_name(), expected, "code {code}");
        }
    }
}
