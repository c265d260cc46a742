#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrobloom::fuzzing::file(data));
