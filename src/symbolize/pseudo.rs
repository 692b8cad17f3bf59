//! What a frame's shape can hold that is no module a symbol file could be for: the
//! kernel's and the runtime's mappings (`[vdso]`, `[anon:…]`, Android's
//! `/dev/ashmem/dalvik-jit-code-cache (deleted)`, JIT code caches), the `???` of an
//! unknown image (Apple's `0x0 + 0` frames), and a JVM error log's `Signal Handlers:`
//! list, whose `[libjvm.so+0x…]` entries are handlers, not a stack. A line holding one
//! is passed through as it is and counted as no frame: its offset would be looked up in
//! nothing, or in the wrong thing.

/// Whether `module`, as a frame names it, is a mapping with no file behind it.
pub(super) fn is_pseudo_module(module: &str) -> bool {
    let name = module.trim();
    name.starts_with('[')
        || name.starts_with("/dev/")
        || name.starts_with("/memfd:")
        || name.starts_with("dalvik-")
        || name.starts_with("anon:")
        || name.ends_with("(deleted)")
        || matches!(name, "???" | "??" | "<unknown>" | "")
}

/// Whether `line` is an entry of a JVM error log's `Signal Handlers:` list
/// (`SIGSEGV: [libjvm.so+0xe5f7d0], sa_mask[0]=…, sa_flags=…`).
pub(super) fn is_signal_handler_entry(line: &str) -> bool {
    let text = line.trim_start();
    let Some((name, rest)) = text.split_once(':') else {
        return false;
    };
    name.len() > 3
        && name.starts_with("SIG")
        && name[3..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && rest.trim_start().starts_with('[')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_with_no_file_behind_them() {
        for m in [
            "[vdso]",
            "[anon:dalvik-LinearAlloc]",
            "[anon:scudo:primary]",
            "/dev/ashmem/dalvik-jit-code-cache",
            "/dev/kgsl-3d0",
            "/memfd:jit-cache (deleted)",
            "dalvik-main space",
            "/data/app/base.apk (deleted)",
            "???",
        ] {
            assert!(is_pseudo_module(m), "{m}");
        }
        for m in [
            "/system/lib64/libc.so",
            "libxul.so",
            "./app",
            "ntdll.dll",
            "Foundation",
        ] {
            assert!(!is_pseudo_module(m), "{m}");
        }
    }

    #[test]
    fn a_jvm_logs_signal_handlers() {
        assert!(is_signal_handler_entry(
            "SIGSEGV: [libjvm.so+0xe5f7d0], sa_mask[0]=11111111011111111101111111111110, sa_flags=SA_RESTART|SA_SIGINFO"
        ));
        assert!(is_signal_handler_entry(
            "   SIGUSR2: [libjvm.so+0xc6f3a0], sa_mask[0]=0"
        ));
        assert!(!is_signal_handler_entry(
            "C  [libc.so.6+0x1a0e5]  __strlen_avx2+0x15"
        ));
        assert!(!is_signal_handler_entry(
            "SIGSEGV (0xb) at pc=0x00007f3a8c1d2e40"
        ));
        assert!(!is_signal_handler_entry("SIG: [x+0x1]"));
    }
}
