use super::*;

fn found(line: &str) -> (&str, u64, Base, Pc) {
    let f = frame(line).unwrap_or_else(|| panic!("no frame in {line:?}"));
    (f.module, f.offset, f.base, f.pc)
}

#[test]
fn sanitizer_frames() {
    let line = "    #1 0x5581f0b5c2a7  (/tmp/uaf+0x1302a7) (BuildId: 0a1b2c3d4e5f6071)";
    let f = frame(line).unwrap();
    assert_eq!(f.module, "/tmp/uaf");
    assert_eq!(f.offset, 0x1302a7);
    assert_eq!(f.build_id, Some("0a1b2c3d4e5f6071"));
    assert_eq!(
        (f.base, f.pc, f.family),
        (Base::Vaddr, Pc::Exact, Family::Sanitizer)
    );
    assert_eq!(&line[f.span], "(/tmp/uaf+0x1302a7)");
    let no_id = "    #0 0x7f3c (/lib/x86_64-linux-gnu/libc.so.6+0x271c9)";
    assert_eq!(frame(no_id).unwrap().offset, 0x271c9);
    // A function name with parentheses of its own, a log prefix, macOS's arch.
    let f = frame("    #2 0x4f12 in call(void (*)(int), int) (/opt/app+0x4f12)").unwrap();
    assert_eq!((f.module, f.offset), ("/opt/app", 0x4f12));
    let logcat = "11-24 12:00:00.123  1234  1234 I wrap.sh : #0 0x7a1b2c3d  \
                  (/system/lib64/libclang_rt.asan-aarch64-android.so+0x9d1c)";
    assert_eq!(found(logcat).1, 0x9d1c);
    let mac = "    #0 0x10272bf1c in main+0x2c (a.out:arm64+0x100003f1c)";
    assert_eq!(found(mac).0, "a.out");
    // TSan: no PC, and `<null>` where it knows nothing.
    let f = frame("    #1 <null> <null> (libtsan.so.0+0x2d1b)").unwrap();
    assert_eq!((f.module, f.family), ("libtsan.so.0", Family::Other));
    let f =
        frame("    #0 Thread1 /tmp/race.c:8:10 (race+0x1290) (BuildId: 0011223344556677)").unwrap();
    assert_eq!((f.module, f.build_id), ("race", Some("0011223344556677")));
}

#[test]
fn coredump_frames_and_their_build_ids() {
    let line = "    #3 0x0000555668fbe145 n/a (/tmp/a.out + 0x1145)";
    assert_eq!(found(line), ("/tmp/a.out", 0x1145, Base::Load, Pc::Return));
    let first = "#0  0x00007f7b5c828153 __libc_start_main (libc.so.6 + 0x27153)";
    assert_eq!(found(first).3, Pc::Exact);
    assert_eq!(
        frame("#4  0x00007fc768b39153 __libc_start_main (libc.so.6)"),
        None
    );
    let mut c = Context::default();
    c.learn(
        "                Module libc.so.6 from deb libc6-2.36 with build-id 0123456789abcdef0123",
    );
    c.learn("Found module /usr/bin/foo with build-id: FEDCBA9876543210");
    c.learn("Module linux-vdso.so.1 without build-id.");
    assert_eq!(c.build_id("libc.so.6"), Some("0123456789abcdef0123"));
    assert_eq!(c.build_id("/usr/bin/foo"), Some("fedcba9876543210"));
    assert_eq!(c.build_id("linux-vdso.so.1"), None);
}

#[test]
fn the_first_frame_of_an_unnumbered_stack_is_exact() {
    let mut c = Context::default();
    let lines = [
        "Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)",
        "C  [libnative.so+0x1e40]  Java_com_example_Native_crash+0x10",
        "j  com.example.Main.main([Ljava/lang/String;)V+9",
        "V  [libjvm.so+0x83a7c5]  JavaCalls::call_helper()+0x315",
    ];
    let mut pcs = Vec::new();
    for line in lines {
        c.learn(line);
        if let Some(mut f) = frame(line) {
            c.place(&mut f);
            pcs.push(f.pc);
        }
    }
    assert_eq!(pcs, [Pc::Exact, Pc::Return]);
}

#[test]
fn android_frames() {
    let line = "      #01 pc 000000000004c7d0  /system/lib64/libc.so (abort+164) \
                (BuildId: 0a1b2c3d4e5f60718293a4b5c6d7e8f9)";
    let f = frame(line).unwrap();
    assert_eq!(f.module, "/system/lib64/libc.so");
    assert_eq!((f.offset, f.pc), (0x4c7d0, Pc::Exact));
    assert_eq!(f.build_id, Some("0a1b2c3d4e5f60718293a4b5c6d7e8f9"));
    let logcat = "11-24 12:00:00.000  1234  1234 F DEBUG   :       #00 pc 00001234  \
                  /data/app/lib/arm/libnative.so";
    assert_eq!(found(logcat).0, "/data/app/lib/arm/libnative.so");
    let anr = "  native: pc 000000000006ab80  /system/lib64/libc.so (__epoll_pwait+8)";
    assert_eq!(found(anr).1, 0x6ab80);
    assert_eq!(found("#00 pc 0x4db10 libc.so ").0, "libc.so");
    let graphene = "    /system/lib64/libui.so (android::GraphicBuffer::getFlattenedSize() \
                    const+8, pc 55ee8)";
    assert_eq!(
        found(graphene),
        ("/system/lib64/libui.so", 0x55ee8, Base::Vaddr, Pc::Exact)
    );
    let apk = "    /data/app/~~rX1==/x-E9==/base.apk!libmono_64.so (pc a0ccb64)";
    assert_eq!(found(apk).1, 0xa0ccb64);
}

#[test]
fn stackwalker_xorg_dr_memory_and_gecko_frames() {
    assert_eq!(
        found(" 0  linux-gate.so + 0x424"),
        ("linux-gate.so", 0x424, Base::Load, Pc::Exact)
    );
    assert_eq!(found(" 12  phantomjs + 0x1adbe28").3, Pc::Return);
    assert_eq!(frame(" 2  libc.so.6!raise + 0x10b"), None);
    assert_eq!(
        found("10  Electron Framework + 0x227900").0,
        "Electron Framework"
    );
    assert_eq!(
        found("0|1|libxul.so||||0x3a1f8c"),
        ("libxul.so", 0x3a1f8c, Base::Load, Pc::Return)
    );
    assert_eq!(frame("0|1|libxul.so|f|||0x3a1f8c"), None);
    let apple = "2   Electron Framework            \t0x000000010b6c9b53 0x10b3a4000 + 3300179";
    assert_eq!(
        found(apple),
        ("Electron Framework", 3300179, Base::Load, Pc::Return)
    );
    // A frame with symbols gives the absolute PC alone, for the `Binary Images` to place.
    assert_eq!(
        found("0   libsystem_kernel.dylib  0x00007fff6b5a82c2 __pthread_kill + 10"),
        (
            "libsystem_kernel.dylib",
            0x7fff6b5a82c2,
            Base::Absolute,
            Pc::Exact
        )
    );
    assert_eq!(
        found("3   Example Helper (Renderer)  0x00000001000c4abc main + 60 (main.m:12)"),
        (
            "Example Helper (Renderer)",
            0x1000c4abc,
            Base::Absolute,
            Pc::Return
        )
    );
    assert_eq!(frame("5   ???  0x0000000000000000 0 + 0"), None);
    let f = frame("V  [libjvm.so+0xb0c3ad]  VMError::report_and_die()+0x4d").unwrap();
    assert_eq!(
        (f.module, f.offset, f.family),
        ("libjvm.so", 0xb0c3ad, Family::Unnumbered)
    );
    assert_eq!(
        found("# C  [ld-linux-x86-64.so.2+0x15de0]").0,
        "ld-linux-x86-64.so.2"
    );
    assert_eq!(frame("C  [+0x40c]  __kernel_rt_sigreturn+0x0"), None);
    assert_eq!(frame("x = buf[len+0x10];"), None);
    let x = "[ 42277.724] (EE) 3: /usr/bin/Xorg.bin (0x400000+0xecc48) [0x4ecc48]";
    assert_eq!(
        found(x),
        ("/usr/bin/Xorg.bin", 0xecc48, Base::Load, Pc::Return)
    );
    assert_eq!(
        frame("[ 42277.724] (EE) 0: /usr/bin/Xorg (xorg_backtrace+0x56) [0x593a46]"),
        None
    );
    let drm = "~~Dr.M~~ # 1 MSXML3.dll!?    +0x0      (0x74981270 <MSXML3.dll+0x1270>)";
    assert_eq!(found(drm), ("MSXML3.dll", 0x1270, Base::Load, Pc::Return));
    let gecko = "GECKO(1292365) #01: ???[/usr/lib/firefox/libxul.so +0x1234567]";
    assert_eq!(
        found(gecko),
        (
            "/usr/lib/firefox/libxul.so",
            0x1234567,
            Base::Load,
            Pc::Exact
        )
    );
}

#[test]
fn backtrace_symbols_and_plain_lines() {
    let f = frame("./app(+0x1234) [0x55d1c2b3a234]").unwrap();
    assert_eq!((f.module, f.offset, f.pc), ("./app", 0x1234, Pc::Return));
    let f = frame("/lib/x86_64-linux-gnu/libc.so.6(+0x2724a)[0x7faa17cef24a]").unwrap();
    assert_eq!(
        (f.module, f.offset, f.base),
        ("/lib/x86_64-linux-gnu/libc.so.6", 0x2724a, Base::Vaddr)
    );
    assert_eq!(
        found("./nopie[0x401180]"),
        ("./nopie", 0x401180, Base::Absolute, Pc::Return)
    );
    assert_eq!(found("./old() [0x4005d4]").2, Base::Absolute);
    assert_eq!(
        found("2024-01-02 ERROR [bt] ./app(+0x10) [0x5500]").0,
        "./app"
    );
    assert_eq!(
        found("./app(main+0x1d)[0x401180]"),
        ("./app", 0x401180, Base::Absolute, Pc::Return)
    );
    assert_eq!(frame("./app(main thing+0x1d)[0x401180]"), None);
    let f = frame("libfoo.so+0x10").unwrap();
    assert_eq!(
        (f.module, f.offset, f.base),
        ("libfoo.so", 0x10, Base::Load)
    );
    let f = frame("4929ac8cb3c174c113cafc7250efe12eee45cd25+0x1f877c").unwrap();
    assert_eq!(f.build_id, Some("4929ac8cb3c174c113cafc7250efe12eee45cd25"));
}

#[test]
fn trailing_blanks_leave_the_token_in_place() {
    for line in [
        "    #1 0x5581f0b5c2a7  (/tmp/uaf+0x1302a7)",
        "    #3 0x0000555668fbe145 n/a (/tmp/a.out + 0x1145)",
        "      #01 pc 000000000004c7d0  /system/lib64/libc.so (abort+164)",
        "    /data/app/~~rX1==/x-E9==/base.apk!libmono_64.so (pc a0ccb64)",
        " 12  phantomjs + 0x1adbe28",
        " 3  \u{e9}t\u{e9} + 0x2",
        "0|1|libxul.so||||0x3a1f8c",
        "2   Electron Framework  0x000000010b6c9b53 0x10b3a4000 + 3300179",
        "C  [libjvm.so+0xb0c3ad]  VMError::report_and_die()+0x4d",
        "[ 42277.724] (EE) 3: /usr/bin/Xorg (0x400000+0xecc48) [0x4ecc48]",
        "./app(+0x1234) [0x55d1c2b3a234]",
        "x\u{a0}./app(+0x1234) [0x55d1c2b3a234]",
        "libfoo.so+0x10",
    ] {
        let token = &line[frame(line).unwrap().span];
        for tail in [" ", "\t\r", " \u{a0}"] {
            let padded = format!("{line}{tail}");
            let f = frame(&padded).unwrap_or_else(|| panic!("{padded:?}"));
            assert_eq!(&padded[f.span], token, "{padded:?}");
        }
    }
}

#[test]
fn other_lines_are_not_frames() {
    for line in [
        "",
        "==1234==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020 at pc \
         0x55cf14361ed3 bp 0x7ffcf62383d0 sp 0x7ffcf62383c8",
        "SUMMARY: AddressSanitizer: heap-use-after-free (/tmp/uaf+0xdded2) (BuildId: 00)",
        "    #0 0x4f1234 in main /src/uaf.c:12:3",
        "a + 0x10",
        "name+0x",
        "name+0x12345678901234567",
        "#x pc 12 lib.so",
        "[  123.456]  dump_stack+0x45/0x57",
        "  kernel: __switch_to+0x8c/0xb4",
        "RIP: 0010:foo+0x12/0x30 [nvidia]",
        "ntdll!NtWaitForSingleObject+0x14",
        "\t/usr/local/go/src/runtime/panic.go:1038 +0x215",
        "  12: 0x55d1c2b3a1d9 - std::rt::lang_start::{{closure}}::h1234",
        "[ 11832.552] (EE) 0: /usr/lib/Xorg (?+0x0) [0x5fac95e67c4d]",
        " 1  XUL!ReceivePort::WaitForMessage(MachReceiveMessage*, unsigned int) \
         [mach_ipc_mac.mm:951 : 237 + 0xf]",
        "array[0x10] = 3",
    ] {
        assert_eq!(frame(line), None, "{line:?}");
    }
}

/// Lines of every shape that once cost quadratic time, and random ones over the
/// tokens' alphabet, at 256 KiB and 1 MiB: reading a line must grow with its length
/// (4 times the bytes within 8 times the time, the best of three runs each; the
/// quadratic reader took 16 times as long, 74 s for 1 MiB of `)`).
#[test]
fn reading_a_line_takes_time_linear_in_its_length() {
    fn shapes(len: usize) -> Vec<(&'static str, String)> {
        let repeat = |unit: &str| unit.repeat(len / unit.len());
        let nested =
            |open: &str, close: &str| format!("{}{}", open.repeat(len / 2), close.repeat(len / 2));
        // A fixed linear congruential sequence: the same lines on every run.
        let mut seed = 0x2545_f491_u64;
        let alphabet = b"()[]<>#+0x pc1a/.:|!";
        let random: String = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                alphabet[(seed >> 33) as usize % alphabet.len()] as char
            })
            .collect();
        vec![
            ("close", repeat(")")),
            ("open", repeat("(")),
            ("nested ()", nested("(", ")")),
            ("nested []", nested("[", "]")),
            ("nested <>", nested("<", ">")),
            ("pc", repeat("pc ")),
            ("numbered pc", repeat("#1 pc ")),
            ("tokens", repeat("(a+0x1) ")),
            ("hashes", repeat("# ")),
            ("random", random),
        ]
    }
    fn best_of_three(line: &str) -> std::time::Duration {
        (0..3)
            .map(|_| {
                let started = std::time::Instant::now();
                let mut context = Context::default();
                context.learn(line);
                std::hint::black_box(frame(std::hint::black_box(line)));
                started.elapsed()
            })
            .min()
            .unwrap_or_default()
    }
    // Sizes 32 times apart: linear is 32 times, quadratic 1,024. A bound of 128 leaves
    // the large line four times the room that cache misses and the other tests running
    // beside it take (at 4 times apart with a bound of 8, a loaded CI machine measured
    // 8.07 for a linear shape). A floor of 5 ms: below it, the clock's noise is the
    // measure.
    let small = shapes(32 << 10);
    let large = shapes(1 << 20);
    for ((name, s), (_, l)) in small.iter().zip(&large) {
        let (ts, tl) = (best_of_three(s), best_of_three(l));
        let allowed = (ts * 128).max(std::time::Duration::from_millis(5));
        assert!(tl <= allowed, "{name}: 32 KiB {ts:?}, 1 MiB {tl:?}");
    }
}

#[test]
fn frames_inside_other_tools_lines() {
    let f = frame("2024-03-02 10:11:12 [Backtrace 0: /usr/lib/libfoo.so.1(+0x2f10) [0x7f11c2f10]]")
        .unwrap();
    assert_eq!(
        (f.module, f.offset, f.base),
        ("/usr/lib/libfoo.so.1", 0x2f10, Base::Vaddr)
    );
    let f = frame("/usr/lib/libfoo.so.1(+0x2f10)").unwrap();
    assert_eq!(
        (f.module, f.offset),
        ("/usr/lib/libfoo.so.1", 0x2f10),
        "its [0x…] wrapped"
    );
    assert_eq!(frame("[0x7f11c2f10]"), None);
    assert_eq!(frame("see foo(+0x10)"), None);
    let f = frame(" 0  libxul.so + 0x1a2b3c\u{ff08}\u{8fd9}\u{ff09}").unwrap();
    assert_eq!((f.module, f.offset), ("libxul.so", 0x1a2b3c));
    let f = frame("Game.dll+00F18CB").unwrap();
    assert_eq!(
        (f.module, f.offset, f.base),
        ("Game.dll", 0xf18cb, Base::Load)
    );
}

#[test]
fn windbg_rows_whose_call_site_is_a_module_offset_or_a_function() {
    let row = "01 000000a1`2b8fe6c0 00007ff6`8a2b5678     myapp+0x2040";
    assert_eq!(found(row), ("myapp", 0x2040, Base::Load, Pc::Return));
    let first = "00 000000a1`2b8fe6b8 00007ff6`8a2b2040     myapp+0x1a2b";
    assert_eq!(found(first).3, Pc::Exact);
    // `kb` on x86: no frame number, three arguments.
    let kb = "0019fe64 00401234 00000000 00000000 7ffdf000 legacy+0x1046";
    assert_eq!(found(kb), ("legacy", 0x1046, Base::Load, Pc::Return));
    let f = frame(kb).unwrap();
    assert_eq!(&kb[f.span], "legacy+0x1046");
    // Resolved by WinDbg already: the offset counts from the function, found by name.
    let named =
        "02 000000a1`2b8fe760 00007ffc`1d2f7034     myapp!main+0x44 [c:\\src\\main.cpp @ 42]";
    let f = frame(named).unwrap();
    assert_eq!(
        (f.module, f.function, f.offset, f.pc),
        ("myapp", Some("main"), 0x44, Pc::Return)
    );
    assert_eq!(&named[f.span], "myapp!main+0x44");
    let template = "00 0000009f`5f6ff6e8 00007ff8`3f1e2b5e     app!std::vector<int,std::allocator<int> >::push_back+0x11";
    let f = frame(template).unwrap();
    assert_eq!(
        f.function,
        Some("std::vector<int,std::allocator<int> >::push_back")
    );
    assert_eq!(f.pc, Pc::Exact);
    let at_start = "0019ff94 77497a9e 7ffdf000 6f3b2c5f 00000000 KERNEL32!BaseThreadInitThunk";
    assert_eq!(frame(at_start).unwrap().offset, 0);
    // An inline frame (no address), the debugger's location line, disassembly.
    for none in [
        "01 (Inline Function) --------`--------     app!inlined+0x5 [c:\\src\\a.h @ 3]",
        "02 000000a1`2b8fe760 00007ffc`1d2f7034     0x7ffc1d2f7034!f+0x4",
        "myapp+0x1a2b:",
        "00007ff6`8a2b1a2b 8b08            mov     ecx,dword ptr [rax]",
        "rax=0000000000000000 rbx=000000a12b8fe8a0 rcx=00007ff68a2b0000",
    ] {
        assert_eq!(frame(none), None, "{none}");
    }
}

#[test]
fn crash_logger_rows_and_functions_taken_for_modules() {
    let row = "[ 0] 0x7FF9867018CB   Game.dll+00F18CB   mov eax, dword ptr [rcx+10h]";
    assert_eq!(found(row), ("Game.dll", 0xf18cb, Base::Load, Pc::Exact));
    let f = frame(row).unwrap();
    assert_eq!(&row[f.span], "Game.dll+00F18CB");
    let caller = "[ 3] 0x7FF9D1E4257D   KERNEL32.DLL+001257D   BaseThreadInitThunk";
    assert_eq!(found(caller).3, Pc::Return);
    assert_eq!(frame("    android::Looper::pollInner(int)+0x3e7"), None);
    assert_eq!(found("libfoo.so+0x1234").0, "libfoo.so");
}

#[test]
fn a_stackwalkers_bare_address_is_absolute_and_of_no_module() {
    let f = frame(" 1  0x55d1c2b3a04e").unwrap();
    assert_eq!(
        (f.module, f.offset, f.base, f.pc),
        ("", 0x55d1c2b3a04e, Base::Absolute, Pc::Return)
    );
    assert_eq!(frame(" 0  0x7f2955fe9a7c").unwrap().pc, Pc::Exact);
    // Not indented, short, or a register line: none.
    for none in [
        "1  0x55d1c2b3a04e",
        " 1  0x1234",
        "    rax = 0x0000000000000000",
    ] {
        assert_eq!(frame(none), None, "{none}");
    }
}
