// A guard around symbolic-demangle's entry point into Swift's demangler.
//
// Swift's demangler has bugs that malformed names reach, and what Rust cannot catch
// would end the process:
// - Swift 6.3.1's printer, given `$sTJSdSSSpSrSUSP` (a line of Swift's own tests, fixed
//   after that release), reads past a node's children and appends to its output until
//   memory runs out (19 GB and a minute here), then throws std::bad_alloc. Each call
//   runs under an allocation budget far above what any real name needs: beyond it,
//   `operator new` throws, and this frame catches what is thrown.
// - Its assertions are compiled in (symbolic-demangle builds it without NDEBUG, and
//   without them the same names would read out of bounds), and its printer calls
//   abort() on node kinds it does not expect: `$sScGySGySiGiGx`, 14 bytes found by the
//   `demangle_swift` fuzz target, fails an assertion; other short names reach the
//   abort(). On glibc, a failing assertion inside a guarded call, and SIGABRT raised
//   inside one, jump back here instead of ending the process. What the call had
//   allocated is lost (its destructors do not run): that is bounded by the call's
//   budget, and after `MAX_LOST` bytes in all no more Swift names are demangled. The
//   printer's own "fatal error: …" line still reaches standard error.
// In every such case the name only stays raw.
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

extern "C" int symbolic_demangle_swift(const char *symbol, char *buffer,
                                       size_t buffer_length, int features);

namespace {

// symbolic-demangle's `features`: 1 | 2 prints the result type and the parameter list,
// with Swift's default options (what `swift demangle` prints, less its type sugar).
const int ALL_FEATURES = 3;

// Bytes one call may allocate in all: a real name, even a SwiftUI type thousands of
// bytes long, needs well under a megabyte.
const size_t BUDGET = size_t(64) << 20;

// Bytes left behind by calls that an assertion ended, after which no more are made.
const size_t MAX_LOST = size_t(256) << 20;

// What the call under way on this thread may still allocate; SIZE_MAX outside a call.
thread_local size_t remaining = SIZE_MAX;

#if defined(__GLIBC__)
// Where a failing assertion or an abort() in the call under way on this thread returns
// to.
thread_local sigjmp_buf *escape = nullptr;
#endif

std::atomic<size_t> lost{0};

} // namespace

// LeakSanitizer's switches, where a sanitizer runtime is linked in (the fuzz targets):
// what a call an assertion ended leaves behind is lost on purpose, and bounded.
#if defined(__GNUC__) || defined(__clang__)
extern "C" void __lsan_disable() __attribute__((weak));
extern "C" void __lsan_enable() __attribute__((weak));
#else
static void (*const __lsan_disable)() = nullptr;
static void (*const __lsan_enable)() = nullptr;
#endif

namespace {

struct LeaksExpected {
    LeaksExpected() {
        if (__lsan_disable != nullptr) {
            __lsan_disable();
        }
    }
    ~LeaksExpected() {
        if (__lsan_enable != nullptr) {
            __lsan_enable();
        }
    }
};

struct Budget {
    Budget() { remaining = BUDGET; }
    ~Budget() { remaining = SIZE_MAX; }
};

// The call itself, apart from the setjmp below (nothing here may live across it).
int guarded(const char *symbol, char *buffer, size_t buffer_length) {
    try {
        Budget budget;
        return symbolic_demangle_swift(symbol, buffer, buffer_length, ALL_FEATURES);
    } catch (...) {
        return 0;
    }
}

} // namespace

// The program's `operator new`: the standard one (malloc, the new-handler, then
// std::bad_alloc), which also spends the budget of a guarded call. The other forms
// (arrays, nothrow) and every `operator delete` of the C++ runtime are defined in terms
// of this one and of free().
void *operator new(size_t size) {
    if (remaining != SIZE_MAX) {
        if (size > remaining) {
            throw std::bad_alloc();
        }
        remaining -= size;
    }
    for (;;) {
        if (void *p = std::malloc(size == 0 ? 1 : size)) {
            return p;
        }
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            throw std::bad_alloc();
        }
        handler();
    }
}

void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

#if defined(__GLIBC__)
// glibc's assertion handler, for the whole program: outside a guarded call it prints
// what glibc prints and aborts.
extern "C" [[noreturn]] void __assert_fail(const char *assertion, const char *file,
                                           unsigned int line,
                                           const char *function) noexcept {
    if (escape != nullptr) {
        siglongjmp(*escape, 1);
    }
    std::fprintf(stderr, "%s:%u: %s%sAssertion `%s' failed.\n", file, line,
                 function ? function : "", function ? ": " : "", assertion);
    std::abort();
}
#endif

namespace {

#if defined(__GLIBC__)
struct sigaction previous_abort_action;

// SIGABRT for the whole program: inside a guarded call, back to it; elsewhere, what was
// there before (by default, the end of the process). glibc's abort() allows a handler
// to leave it and be called again.
void on_abort(int) {
    if (escape != nullptr) {
        siglongjmp(*escape, 1);
    }
    sigaction(SIGABRT, &previous_abort_action, nullptr);
    raise(SIGABRT);
}

bool install_abort_handler() {
    struct sigaction action = {};
    action.sa_handler = on_abort;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGABRT, &action, &previous_abort_action) == 0;
}

// The guarded call, returned to by a failing assertion or abort() (nothing with a
// destructor may live in this frame across the sigsetjmp).
int jump_guarded(const char *symbol, char *buffer, size_t buffer_length) {
    sigjmp_buf here;
    if (sigsetjmp(here, 1) != 0) {
        escape = nullptr;
        size_t spent = BUDGET - (remaining == SIZE_MAX ? BUDGET : remaining);
        lost.fetch_add(spent, std::memory_order_relaxed);
        remaining = SIZE_MAX;
        return 0;
    }
    escape = &here;
    int result = guarded(symbol, buffer, buffer_length);
    escape = nullptr;
    return result;
}
#else
// Elsewhere an assertion or abort() in Swift's demangler ends the process.
int jump_guarded(const char *symbol, char *buffer, size_t buffer_length) {
    return guarded(symbol, buffer, buffer_length);
}
#endif

} // namespace

extern "C" int dumpsyms_demangle_swift(const char *symbol, char *buffer,
                                       size_t buffer_length) noexcept {
    if (lost.load(std::memory_order_relaxed) > MAX_LOST) {
        return 0;
    }
#if defined(__GLIBC__)
    static const bool handling_abort = install_abort_handler();
    (void)handling_abort;
#endif
    // Undone on every path, the jump's included.
    LeaksExpected leaks_expected;
    return jump_guarded(symbol, buffer, buffer_length);
}
