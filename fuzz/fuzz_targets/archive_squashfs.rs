#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| dumpsyms::fuzzing::archive_squashfs(data));
