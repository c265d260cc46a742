//! The defaults of every parameter a creation may leave out: the values of the
//! module's `bf-*` / `cf-*` configurations until an operator sets them, and the
//! values every binding (Python, Java) creates a filter with outside a server.
//! RedisBloom's defaults (its `src/config.c`, v2.8.2:
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/config.c>).

use crate::cf::CuckooDefaults;
use crate::params::{BloomDefaults, CreateParams};
use ferrobloom_core::bloom::{BloomLayout, ChainOptions};

/// `bf-error-rate` 0.01, `bf-initial-size` 100, `bf-expansion-factor` 2,
/// ferrobloom's `bf-layout classic`, and valkey-bloom's `bloom-tightening-ratio`
/// 0.5 with `bloom-use-random-seed no` (ferrobloom's default: no seed).
pub const BLOOM: BloomDefaults = BloomDefaults {
    error: 0.01,
    capacity: 100,
    expansion: 2,
    layout: BloomLayout::Classic,
    opts: ChainOptions::REDISBLOOM,
};

/// `cf-initial-size` 1024, `cf-bucket-size` 2, `cf-max-iterations` 20,
/// `cf-expansion-factor` 1, and ferrobloom's `cf-error-rate 0` (RedisBloom's
/// 8-bit fingerprints) and `cf-layout ferrobloom`.
pub const CUCKOO: CuckooDefaults = CuckooDefaults {
    capacity: 1024,
    bucket_size: 2,
    max_iterations: 20,
    expansion: 1,
    error: None,
    redisbloom: false,
};

/// A creation with every default: `BF.RESERVE`'s parameters when it says nothing
/// optional, on a server whose configuration was never changed.
impl Default for CreateParams {
    fn default() -> Self {
        CreateParams::from_defaults(&BLOOM)
    }
}
