#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrobloom::fuzzing::rdb_redisbloom(data));
