//! RedisBloom's RDB primitives, as its loaders read them: the one thing the
//! RedisBloom readers (`bloom/redisbloom.rs`, `cuckoo/redisbloom.rs`) need from
//! the payload that carries them.

/// Reads RedisBloom's RDB primitives, in the order its loaders read them (the
/// Redis layer reads a `RedisModuleIO`; tests and fuzz targets read memory).
pub trait RdbRead {
    /// A string buffer read from the payload.
    type Buf: AsRef<[u8]>;
    /// The next unsigned integer (`None`: the payload ended or is unreadable).
    fn unsigned(&mut self) -> Option<u64>;
    /// The next double.
    fn double(&mut self) -> Option<f64>;
    /// The next string buffer.
    fn buffer(&mut self) -> Option<Self::Buf>;
}
