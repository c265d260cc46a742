//! The one path from parameters to a filter. The module's BF.RESERVE / CF.RESERVE
//! (and every command that creates a missing key) and every binding's
//! constructor call these, so a filter is shaped, validated and refused the same
//! way in a server and outside it.

use crate::bf::parse_reserve as parse_bf_reserve;
use crate::cf::parse_reserve as parse_cf_reserve;
use crate::defaults;
use crate::errors::{self as e, CmdError, Op};
use crate::params::CreateParams;
use ferrobloom_core::bloom::{BloomChain, BloomLayout, Limits};
use ferrobloom_core::cuckoo::{CuckooFilter, CuckooParams};
use ferrobloom_core::dump::SERVER_DEFAULT_LIMITS;
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::window::Window;

/// The Bloom filter `p` describes, within `limits`. `check_scale_to`: refuse a
/// `VALIDATESCALETO n` the filter could never reach within `limits` (a server
/// skips it for what its primary or its AOF sends: the primary checked it).
pub fn bloom(
    p: &CreateParams,
    limits: &Limits,
    check_scale_to: bool,
) -> Result<BloomFilter, CmdError> {
    let filter = if let Some(ms) = p.window_ms {
        Window::new(p.capacity, p.error, p.expansion, p.layout, ms, limits).map(BloomFilter::from)
    } else if p.layout == BloomLayout::RedisBloom {
        BloomChain::new_redisbloom(
            p.capacity,
            p.error,
            p.expansion,
            p.nonscaling_growth,
            limits,
        )
        .map(BloomFilter::from)
    } else {
        BloomChain::with_options(p.capacity, p.error, p.expansion, p.layout, p.opts, limits).map(
            |mut c| {
                // The primary's first link (a replicated BF.RESERVE's SHAPES),
                // when it fits; else the one sized here.
                if let Some(s) = p.first_link {
                    c.adopt_first_link(s, limits);
                }
                BloomFilter::from(c)
            },
        )
    }
    .map_err(|err| e::bloom(Op::Create, &err))?;
    if let (Some(n), true, Some(chain)) = (p.scale_to, check_scale_to, filter.as_chain()) {
        chain.scale_to(Some(n), limits).map_err(e::scale_limit)?;
    }
    Ok(filter)
}

/// The cuckoo filter `p` describes, within `max_bytes`.
pub fn cuckoo(p: &CuckooParams, max_bytes: u64) -> Result<CuckooFilter, CmdError> {
    CuckooFilter::new(p, max_bytes).map_err(|err| e::cuckoo(Op::Create, &err))
}

/// The filter `BF.RESERVE key <args>` creates on a server with the default
/// configuration (a filter outside a server): `args` are the command's
/// arguments after the key (`error_rate capacity [EXPANSION e] [NONSCALING] …`),
/// as a client sends them.
pub fn reserve_bloom(args: &[&[u8]]) -> Result<BloomFilter, CmdError> {
    let mut all: Vec<&[u8]> = Vec::with_capacity(args.len() + 2);
    all.extend_from_slice(&[b"BF.RESERVE", b"key"]);
    all.extend_from_slice(args);
    let p = parse_bf_reserve(&all.as_slice(), &defaults::BLOOM)?;
    bloom(&p, &SERVER_DEFAULT_LIMITS, true)
}

/// The filter `CF.RESERVE key <args>` creates on a server with the default
/// configuration: `args` after the key (`capacity [BUCKETSIZE b] …`).
pub fn reserve_cuckoo(args: &[&[u8]]) -> Result<CuckooFilter, CmdError> {
    let mut all: Vec<&[u8]> = Vec::with_capacity(args.len() + 2);
    all.extend_from_slice(&[b"CF.RESERVE", b"key"]);
    all.extend_from_slice(args);
    let p = parse_cf_reserve(&all.as_slice(), &defaults::CUCKOO)?;
    cuckoo(&p, SERVER_DEFAULT_LIMITS.max_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_takes_the_servers_defaults_and_texts() {
        let f = reserve_bloom(&[b"0.01", b"1000"]).unwrap();
        assert_eq!((f.capacity(), f.expansion()), (1000, Some(2)));
        let f = reserve_bloom(&[b"0.001", b"10", b"NONSCALING"]).unwrap();
        assert_eq!(f.expansion(), None);
        let err = reserve_bloom(&[b"2", b"1000"]).err();
        assert_eq!(err.as_ref().map(CmdError::text), Some(e::ERROR_RATE_RANGE));
        let err = reserve_bloom(&[b"0.01"]).err();
        assert_eq!(err, Some(CmdError::WrongArity));
        let c = reserve_cuckoo(&[b"1000"]).unwrap();
        assert_eq!(c.bucket_size(), defaults::CUCKOO.bucket_size);
        let err = reserve_cuckoo(&[b"2"]).err();
        assert_eq!(err.as_ref().map(CmdError::text), Some(e::CF_CAPACITY_MIN));
    }

    #[test]
    fn scale_to_is_checked_only_when_asked() {
        let p = CreateParams {
            scale_to: Some(1 << 40),
            ..CreateParams::from_defaults(&defaults::BLOOM)
        };
        assert!(bloom(&p, &SERVER_DEFAULT_LIMITS, true).is_err());
        assert!(bloom(&p, &SERVER_DEFAULT_LIMITS, false).is_ok());
    }
}
