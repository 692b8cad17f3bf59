//! Compiles the C++ guard around Swift's demangler (src/demangle/swift_guard.cpp).

fn main() {
    println!("cargo:rerun-if-changed=src/demangle/swift_guard.cpp");
    cc::Build::new()
        .cpp(true)
        .file("src/demangle/swift_guard.cpp")
        .compile("dumpsyms_swift_guard");
}
