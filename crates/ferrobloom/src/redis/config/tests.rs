//! Unit tests of the configuration (the settings are process-wide statics:
//! their checks run in one sequence).

use super::*;

#[test]
fn module_args_are_validated() {
    assert!(apply_module_args(&[]).is_ok());
    assert!(apply_module_args(&[b""]).is_ok());
    assert!(apply_module_args(&[b"ERROR_RATE"]).is_err());
    assert!(apply_module_args(&[b"NOPE", b"1"]).is_err());
    assert!(apply_module_args(&[b"INITIAL_SIZE", b"0"]).is_err());
    assert!(apply_module_args(&[b"INITIAL_SIZE", b"1073741825"]).is_err());
    assert!(apply_module_args(&[b"ERROR_RATE", b"1"]).is_err());
    assert!(apply_module_args(&[b"CF_MAX_EXPANSIONS", b"0"]).is_err());
    assert!(apply_module_args(&[b"error_rate", b"0.5", b"bf-initial-size", b"1000"]).is_ok());
    assert_eq!(bf_error_rate(), 0.25, "clamped like RedisBloom");
    assert_eq!(BF_INITIAL_SIZE.get(), 1000);
    assert!(apply_module_args(&[b"ERROR_RATE", b"0.01", b"INITIAL_SIZE", b"100"]).is_ok());
    assert!(apply_module_args(&[b"merge-max-bytes", b"0"]).is_err());
    assert!(apply_module_args(&[b"MERGE-MAX-BYTES", b"-5"]).is_err());
    assert!(apply_module_args(&[b"merge-max-bytes", b"1gb"]).is_err());
    assert!(apply_module_args(&[b"merge-max-bytes", b"1048576"]).is_ok());
    assert_eq!(merge_max_bytes(false), 1 << 20);
    assert_eq!(merge_max_bytes(true), u64::MAX);
    assert!(apply_module_args(&[b"merge-max-bytes", b"67108864"]).is_ok());
    assert_eq!(bloom_defaults(false).error, 0.01);
    // valkey-bloom's names (the same statics: checked here, in sequence).
    valkey::module_args_with_valkey_blooms_names();
    assert!(apply_module_args(&[b"BLOOM-CAPACITY", b"0"]).is_err());
    assert!(apply_module_args(&[b"bloom-capacity", b"100", b"bf.bloom-fp-rate", b"0.01"]).is_ok());
    assert_eq!(BF_INITIAL_SIZE.get(), 100);
}
