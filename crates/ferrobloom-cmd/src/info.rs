//! The fields of BF.INFO and CF.INFO, one table each ([`BF_INFO`], [`CF_INFO`]):
//! each row is a field's keyword (BF.INFO's single-field form), its label (the
//! key in the reply), whether the default reply has it, whose field it is and
//! how its value is read from a filter. The module's BF.INFO and CF.INFO
//! (replies, the single-field parse, COMMAND DOCS' list of fields) and the
//! bindings' `info()` all read these tables, so a new field is one row here.
//!
//! The default replies keep exactly RedisBloom's keys, types and order
//! (<https://redis.io/docs/latest/commands/bf.info/>,
//! <https://redis.io/docs/latest/commands/cf.info/>): strict clients refuse a
//! map with any other key. valkey-bloom's and ferrobloom's fields exist only
//! in the single-field form.

use std::ffi::CStr;

use crate::errors::{self as e, CmdError};
use crate::options::Source;
use crate::parse::is_keyword;
use ferrobloom_core::bloom::{BloomChain, Limits};
use ferrobloom_core::cuckoo::CuckooFilter;
use ferrobloom_core::filter::BloomFilter;

/// A field's value, as a reply types it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InfoValue {
    /// A non-negative count (an integer reply).
    Count(u64),
    Integer(i64),
    Double(f64),
    Null,
}

/// What reading a field may need besides the filter.
pub struct InfoContext<'a> {
    /// The clock (ms since the epoch), read only for a filter whose answers
    /// depend on time.
    pub clock: &'a dyn Fn() -> u64,
    /// The limits the filter grows within (`Max scaled capacity`).
    pub limits: Limits,
}

/// One field of an INFO command over filters of type `F`.
pub struct InfoField<F: 'static> {
    /// The single-field form's keyword (`BF.INFO key CAPACITY`), matched as a
    /// whole argument, case-insensitively.
    pub keyword: &'static str,
    /// The key in the reply.
    pub label: &'static CStr,
    /// In the default reply (RedisBloom's fields).
    pub default: bool,
    /// Answered only for a scaling, unwindowed filter (else `Invalid
    /// information value`, as valkey-bloom).
    pub scaling_only: bool,
    pub source: Source,
    pub value: fn(&F, &InfoContext) -> InfoValue,
}

impl<F> InfoField<F> {
    /// The COMMAND DOCS name of the field: its keyword in lower case.
    pub fn doc_name(&self) -> String {
        self.keyword.to_ascii_lowercase()
    }
}

/// Items it answers for now (a windowed filter: in its live window).
fn live_items(f: &BloomFilter, cx: &InfoContext) -> u64 {
    f.live_items(if f.is_timed() { (cx.clock)() } else { 0 })
}

/// BF.INFO's fields: the default reply's five (RedisBloom's), then the
/// single fields, in COMMAND DOCS order.
pub static BF_INFO: &[InfoField<BloomFilter>] = &[
    InfoField {
        keyword: "CAPACITY",
        label: c"Capacity",
        default: true,
        scaling_only: false,
        source: Source::RedisBloom,
        value: |f, _| InfoValue::Count(f.capacity()),
    },
    InfoField {
        keyword: "SIZE",
        label: c"Size",
        default: true,
        scaling_only: false,
        source: Source::RedisBloom,
        value: |f, _| InfoValue::Count(f.mem_usage()),
    },
    InfoField {
        keyword: "FILTERS",
        label: c"Number of filters",
        default: true,
        scaling_only: false,
        source: Source::RedisBloom,
        value: |f, _| InfoValue::Count(f.link_count() as u64),
    },
    InfoField {
        keyword: "ITEMS",
        label: c"Number of items inserted",
        default: true,
        scaling_only: false,
        source: Source::RedisBloom,
        value: |f, cx| InfoValue::Count(live_items(f, cx)),
    },
    InfoField {
        keyword: "EXPANSION",
        label: c"Expansion rate",
        default: true,
        scaling_only: false,
        source: Source::RedisBloom,
        value: |f, _| match f.expansion() {
            Some(x) => InfoValue::Integer(i64::from(x)),
            None => InfoValue::Null,
        },
    },
    InfoField {
        keyword: "ERROR",
        label: c"Error rate",
        default: false,
        scaling_only: false,
        source: Source::ValkeyBloom,
        value: |f, _| InfoValue::Double(f.error_rate()),
    },
    InfoField {
        keyword: "TIGHTENING",
        label: c"Tightening ratio",
        default: false,
        scaling_only: true,
        source: Source::ValkeyBloom,
        value: |f, _| {
            let opts = f.as_chain().map(BloomChain::options).unwrap_or_default();
            InfoValue::Double(opts.tightening)
        },
    },
    InfoField {
        keyword: "MAXSCALEDCAPACITY",
        label: c"Max scaled capacity",
        default: false,
        scaling_only: true,
        source: Source::ValkeyBloom,
        value: |f, cx| {
            let total = f.as_chain().and_then(|c| c.scale_to(None, &cx.limits).ok());
            InfoValue::Count(total.unwrap_or(0))
        },
    },
    InfoField {
        keyword: "WINDOW",
        label: c"Window",
        default: false,
        scaling_only: false,
        source: Source::Ferrobloom,
        value: |f, _| match f.window_ms() {
            Some(ms) => InfoValue::Double(ms as f64 / 1000.0),
            None => InfoValue::Null,
        },
    },
];

/// A CF.INFO row: one of RedisBloom's counts, in the default reply.
macro_rules! cf_field {
    ($kw:literal, $label:literal, |$f:ident| $count:expr) => {
        InfoField {
            keyword: $kw,
            label: $label,
            default: true,
            scaling_only: false,
            source: Source::RedisBloom,
            value: |$f, _| InfoValue::Count($count),
        }
    };
}

/// CF.INFO's fields: exactly RedisBloom's eight, in its order (ferrobloom's
/// own facts, the fingerprint size and error rate, are in CF.DEBUG). CF.INFO
/// has no single-field form; the keywords name the fields in COMMAND DOCS
/// and tests only.
pub static CF_INFO: &[InfoField<CuckooFilter>] = &[
    cf_field!("SIZE", c"Size", |f| f.mem_usage() as u64),
    cf_field!("BUCKETS", c"Number of buckets", |f| f.base_buckets()),
    cf_field!("FILTERS", c"Number of filters", |f| f.num_filters() as u64),
    cf_field!("ITEMS", c"Number of items inserted", |f| f.num_items()),
    cf_field!("DELETED", c"Number of items deleted", |f| f.num_deletes()),
    cf_field!("BUCKETSIZE", c"Bucket size", |f| u64::from(f.bucket_size())),
    cf_field!("EXPANSION", c"Expansion rate", |f| u64::from(f.expansion())),
    cf_field!("MAXITERATIONS", c"Max iterations", |f| u64::from(
        f.max_iterations()
    )),
];

/// The field of BF.INFO's single-field form `arg` names.
pub fn find_bf(arg: &[u8]) -> Result<&'static InfoField<BloomFilter>, CmdError> {
    BF_INFO
        .iter()
        .find(|f| is_keyword(arg, f.keyword))
        .ok_or(e::INVALID_INFO_VALUE.into())
}

impl InfoField<BloomFilter> {
    /// Whether the field describes `f` (valkey-bloom's growth fields describe a
    /// scaling chain: not a non-scaling filter's, nor a windowed one's, which
    /// its window sizes).
    pub fn describes(&self, f: &BloomFilter) -> bool {
        !self.scaling_only || (f.expansion().is_some() && f.window_ms().is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_consistent() {
        for f in BF_INFO {
            assert!(f.keyword.bytes().all(|b| b.is_ascii_uppercase()));
            assert_eq!(BF_INFO.iter().filter(|g| g.keyword == f.keyword).count(), 1);
            // RedisBloom's fields are the default reply, and only they are.
            assert_eq!(f.default, f.source == Source::RedisBloom, "{}", f.keyword);
            assert!(std::ptr::eq(
                find_bf(f.keyword.to_ascii_lowercase().as_bytes()).unwrap(),
                f
            ));
        }
        let default: Vec<&CStr> = BF_INFO
            .iter()
            .filter(|f| f.default)
            .map(|f| f.label)
            .collect();
        assert_eq!(
            default,
            [
                c"Capacity",
                c"Size",
                c"Number of filters",
                c"Number of items inserted",
                c"Expansion rate"
            ]
        );
        assert_eq!(CF_INFO.len(), 8);
        assert!(CF_INFO.iter().all(|f| f.default));
        assert_eq!(find_bf(b"NOPE").err(), Some(e::INVALID_INFO_VALUE.into()));
        assert!(find_bf(b"CAPACITYX").is_err());
    }
}
