//! The bootstrap's scripts (`Part`) as QuickJS bytecode: the core loads into each fresh VM as it
//! is built (parsing and compiling its source took most of the cost of a fresh VM), the other
//! parts on first use, from guest code (`hostPart`).
//!
//! The bytecode ships with the crate (`src/bootstrap/compiled/`), written ahead of time by this
//! module's test `the_shipped_bytecode_is_what_this_engine_compiles`, so a process compiles
//! nothing: a first `exec` used to wait ~7.5M instructions for the core's compilation. Each
//! shipped file starts with the identity of the engine build that wrote it
//! (`qjs::CODEMODE_ENGINE_ID`, PATCHES.md patch 11), a hash of the part's source and a hash of
//! the bytecode; it is used only when all three match (and the target is little-endian, as the
//! files are), since QuickJS reads bytecode of another build, of an older source, or damaged,
//! without noticing. Otherwise the part is compiled once per process: the core on a thread the
//! first VM starts while it builds its runtime and context, then the other parts on the same
//! thread. Each compile is counted ([`bootstrap_compiles`](crate::bootstrap_compiles)), so a
//! build whose shipped files stopped loading shows in a host's metrics and fails a release test
//! (the test262 runner's).
//!
//! One of the few places allowed unsafe code (the workspace lints `deny` it rather than `forbid`
//! it; see the root `Cargo.toml`): QuickJS trusts bytecode blindly, so loading it is unsafe. The
//! bytes loaded here never come from outside: shipped files are part of the crate's source and
//! are loaded only into the engine build whose identity they carry, and compiled ones are written
//! by the same QuickJS build, in this process, from the sources compiled into the crate. Neither
//! is modified afterwards, and guest code cannot reach or alter them. If compiling fails (it
//! cannot for the shipped sources), each VM compiles the core from source, and the other parts
//! are unavailable.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use rquickjs::{Context, Ctx, Function, Runtime, Value, qjs};

/// A script of the bootstrap. `Core` loads into every VM before any guest code; the others load
/// on first use, from the core (its `hostPart` native), so a VM pays only for what its program
/// touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// `bootstrap.js`: the bridge, the installer, the deferral of the runtime globals.
    Core,
    /// `bootstrap/globals.js`: console, TextEncoder, TextDecoder, structuredClone and the timers.
    Globals,
    /// `bootstrap/readings.js`: the clock and randomness read through a run's tape.
    Readings,
    /// `bootstrap/cut.js`: the cut of a value too large for what is left of the output budget.
    Cut,
}

impl Part {
    const ALL: [Part; 4] = [Part::Core, Part::Globals, Part::Readings, Part::Cut];

    /// The part the bootstrap's `hostPart(index)` names (`GLOBALS_PART` and so on).
    pub(crate) fn from_index(index: u32) -> Option<Part> {
        Self::ALL.get(usize::try_from(index).ok()?).copied()
    }

    /// The trusted source.
    const fn source(self) -> &'static str {
        match self {
            Part::Core => include_str!("bootstrap.js"),
            Part::Globals => include_str!("bootstrap/globals.js"),
            Part::Readings => include_str!("bootstrap/readings.js"),
            Part::Cut => include_str!("bootstrap/cut.js"),
        }
    }

    /// The script's name (bootstrap frames in stack traces show none: see `WRITE_FLAGS`).
    fn name(self) -> &'static str {
        match self {
            Part::Core => "<codemode>",
            Part::Globals => "<codemode globals>",
            Part::Readings => "<codemode readings>",
            Part::Cut => "<codemode cut>",
        }
    }

    /// The part's bytecode: the shipped file's, or else compiled in this process. `None` if
    /// compiling failed (it cannot for the shipped sources).
    fn bytecode(self) -> Option<&'static [u8]> {
        self.shipped().or_else(|| self.compiled_here())
    }

    /// The shipped file of the part, header included.
    fn shipped_file(self) -> &'static [u8] {
        match self {
            Part::Core => include_bytes!("bootstrap/compiled/core.bin"),
            Part::Globals => include_bytes!("bootstrap/compiled/globals.bin"),
            Part::Readings => include_bytes!("bootstrap/compiled/readings.bin"),
            Part::Cut => include_bytes!("bootstrap/compiled/cut.bin"),
        }
    }

    /// The shipped bytecode, if it was written by this engine build from this source (checked
    /// once per process: the bytecode's hash reads the whole file).
    fn shipped(self) -> Option<&'static [u8]> {
        static CHECKED: [OnceLock<Option<&'static [u8]>>; 4] = [const { OnceLock::new() }; 4];
        *CHECKED[self as usize].get_or_init(|| self.loadable(self.shipped_file()))
    }

    /// The bytecode in `file`, a shipped file of this part, if this build may load it: its
    /// header names this engine build and this part's source, and hashes the bytes that follow.
    fn loadable(self, file: &[u8]) -> Option<&[u8]> {
        let (header, bytes) = file.split_at_checked(SHIPPED_HEADER)?;
        let (written_by, bytes_hash) = header.split_at(IDENTITY);
        let loadable = cfg!(target_endian = "little")
            && written_by == identity(self)
            && bytes_hash == fnv1a(bytes).to_le_bytes();
        loadable.then_some(bytes)
    }

    /// The shipped file of this part for `bytecode`, compiled by this build.
    #[cfg(test)]
    fn file_for(self, bytecode: &[u8]) -> Vec<u8> {
        [
            &identity(self)[..],
            &fnv1a(bytecode).to_le_bytes(),
            bytecode,
        ]
        .concat()
    }

    /// The part compiled once per process on a thread the first VM starts
    /// ([`start_warming_up`]): the core while the VM builds its runtime and context (or when
    /// the VM loads it, if that thread could not start), then the other parts, so a first
    /// `exec` waits for the core alone. Never compiled on a guest's stack: a part asked for
    /// before its thread finished is waited for.
    fn compiled_here(self) -> Option<&'static [u8]> {
        static CORE: OnceLock<Option<Vec<u8>>> = OnceLock::new();
        match self {
            Part::Core => CORE
                .get_or_init(|| compile_alone([Part::Core]).and_then(|[core]| core))
                .as_deref(),
            Part::Globals | Part::Readings | Part::Cut => {
                start_compiling_the_rest();
                let rest = REST.wait().as_ref()?;
                Some(rest[self as usize - 1].as_slice())
            }
        }
    }
}

/// The bytes before a shipped part's bytecode: its [`identity`], then the bytecode's hash (8
/// bytes, little-endian).
const SHIPPED_HEADER: usize = IDENTITY + 8;

/// The bytes of [`identity`].
const IDENTITY: usize = 16;

/// What a shipped file of `part` must have been written by: this engine build's identity, then
/// the hash of the part's source (each 8 bytes, little-endian).
fn identity(part: Part) -> [u8; IDENTITY] {
    /// Each part's source hash, computed as the crate compiles.
    const SOURCE_HASHES: [u64; 4] = [
        fnv1a(Part::Core.source().as_bytes()),
        fnv1a(Part::Globals.source().as_bytes()),
        fnv1a(Part::Readings.source().as_bytes()),
        fnv1a(Part::Cut.source().as_bytes()),
    ];
    let mut identity = [0; IDENTITY];
    identity[..8].copy_from_slice(&qjs::CODEMODE_ENGINE_ID.to_le_bytes());
    identity[8..].copy_from_slice(&SOURCE_HASHES[part as usize].to_le_bytes());
    identity
}

/// FNV-1a (64-bit) of `bytes`: enough to tell an edited source, or a damaged file, from the one
/// a file was written from (an accident, not an attack: the files are the crate's own).
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut at = 0;
    while at < bytes.len() {
        hash = (hash ^ bytes[at] as u64).wrapping_mul(0x0000_0100_0000_01b3);
        at += 1;
    }
    hash
}

/// Whether every part ships usable bytecode: then the process compiles nothing.
fn all_shipped() -> bool {
    Part::ALL.iter().all(|part| part.shipped().is_some())
}

/// The parts but the core, in [`Part::ALL`]'s order.
static REST: OnceLock<Option<[Vec<u8>; 3]>> = OnceLock::new();

/// Compiles the parts but the core, once per process (later and concurrent calls wait for the
/// first).
fn compile_the_rest() {
    REST.get_or_init(|| {
        let [globals, readings, cut] = compile_alone([Part::Globals, Part::Readings, Part::Cut])?;
        Some([globals?, readings?, cut?])
    });
}

/// Marks that the parts but the core are being compiled (or were): a caller that finds them
/// started waits for [`REST`] rather than compiling them again. Entered with `call_once_force`:
/// should compiling ever panic, the next caller starts it again.
static REST_STARTED: std::sync::Once = std::sync::Once::new();

/// Starts, once per process, a thread that compiles the parts but the core; without a thread,
/// compiles them on the calling thread. A call while [`start_warming_up`]'s thread compiles them
/// waits for it; later calls return at once.
pub(crate) fn start_compiling_the_rest() {
    REST_STARTED.call_once_force(|_| {
        if !spawn_warm_up("codemode-warm-up", compile_the_rest) {
            compile_the_rest();
        }
    });
}

/// The threads this module started, until [`finish_warming_up`] joins them.
static WARM_UP_THREADS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Starts `work` on a thread named `name`, kept for [`finish_warming_up`]; `false` if no thread
/// could start.
fn spawn_warm_up(name: &str, work: impl FnOnce() + Send + 'static) -> bool {
    match std::thread::Builder::new().name(name.into()).spawn(work) {
        Ok(thread) => {
            WARM_UP_THREADS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(thread);
            true
        }
        Err(_) => false,
    }
}

/// Starts, once per process, warming the process up on threads of its own: one runs `first`
/// (other once-per-process work its caller wants off its own path) and, unless every part
/// ships, one compiles the core, then the other parts. The first VM builds its runtime and
/// context meanwhile (compiling the core is most of what a process's first VM costs) and waits
/// for the core only if it is not compiled yet. A thread that cannot start leaves its work to
/// whoever needs it: the VM compiles the core when it loads it, and the first part asked for
/// starts [`start_compiling_the_rest`].
pub(crate) fn start_warming_up(first: fn()) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        spawn_warm_up("codemode-warm-up", first);
        if all_shipped() {
            return;
        }
        spawn_warm_up("codemode-compile", || {
            Part::Core.bytecode();
            REST_STARTED.call_once_force(|_| compile_the_rest());
        });
    });
}

/// Waits until every part that does not ship is compiled and every warm-up thread this module
/// started (the engine probe's, and those compiling parts) has ended: for a process that can
/// start no thread later, and in which no thread may make a system call its filter forbids (a
/// worker process, before its system-call filter: a thread still starting, or ending, makes
/// some).
pub fn finish_warming_up() {
    if !all_shipped() {
        start_compiling_the_rest();
        REST.wait();
    }
    let threads = std::mem::take(
        &mut *WARM_UP_THREADS
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    for thread in threads {
        // A thread that panicked has ended as well.
        let _ = thread.join();
    }
}

/// How the parts are written: without source text and debug information (less to load per VM,
/// guest code that stringifies a bootstrap function, `text.toString()`, sees no bootstrap
/// source, and bootstrap frames in guest-visible stacks carry no line numbers:
/// `at encode (<null>:0:1)`).
const WRITE_FLAGS: u32 =
    qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE | qjs::JS_WRITE_OBJ_STRIP_DEBUG;

/// The bytecode of `part`'s script, compiled in `ctx`.
fn compile(ctx: &Ctx<'_>, part: Part) -> Option<Vec<u8>> {
    let source = CString::new(part.source()).ok()?;
    let name = CString::new(part.name()).ok()?;
    let ctx_ptr = ctx.as_raw().as_ptr();
    // SAFETY: `ctx` is live and current on this thread; `source` and `name` are NUL-terminated
    // and outlive the calls (`JS_Eval` reads `source.len()` bytes and needs the NUL after
    // them). The compiled script (a function bytecode value) is ours and freed after it is
    // written; the buffer `JS_WriteObject` answers is copied, then freed with the context's
    // allocator.
    unsafe {
        let script = qjs::JS_Eval(
            ctx_ptr,
            source.as_ptr(),
            part.source().len() as _,
            name.as_ptr(),
            (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32,
        );
        if qjs::JS_IsException(script) {
            drop(ctx.catch());
            return None;
        }
        let mut length = 0;
        let written = qjs::JS_WriteObject(ctx_ptr, &mut length, script, WRITE_FLAGS as i32);
        qjs::JS_FreeValue(ctx_ptr, script);
        if written.is_null() {
            drop(ctx.catch());
            return None;
        }
        let bytes = std::slice::from_raw_parts(written, length as usize).to_vec();
        qjs::js_free(ctx_ptr, written.cast());
        Some(bytes)
    }
}

/// The bytecode of each of `parts`, compiled in one runtime of their own (`None` if it could not
/// be made; `None` for a part that did not compile). The context holds what the compiler needs
/// and no more: the base objects (the compiler makes strings, arrays and errors), `eval` (the
/// entry point `JS_Eval` compiles through) and the regular-expression compiler (for literals).
/// The intrinsics a VM's guest sees (typed arrays, `Map`, `Promise`, `Date`, ...) would cost
/// ~0.8M instructions to make and ~0.3M to free, a tenth of compiling the core, and the written
/// bytecode does not depend on them: it names every property by its text.
fn compile_alone<const N: usize>(parts: [Part; N]) -> Option<[Option<Vec<u8>>; N]> {
    let runtime = Runtime::new().ok()?;
    let context = Context::custom::<(
        rquickjs::context::intrinsic::Eval,
        rquickjs::context::intrinsic::RegExpCompiler,
    )>(&runtime)
    .ok()?;
    crate::stats::bootstrap_compiled(N as u64);
    Some(parts.map(|part| {
        let mut bytes = context.with(|ctx| compile(&ctx, part))?;
        skip_checksum(&mut bytes)?;
        Some(bytes)
    }))
}

/// Marks written bytecode as carrying no checksum. QuickJS's format starts with a version byte
/// and a 32-bit checksum of the rest, which every `JS_ReadObject` recomputes (a multiply per 4
/// bytes: ~6 µs for the core, in every fresh VM); `0xFFFF_FFFF` there is the format's "not
/// checked" value. The checksum guards bytes from outside against corruption; these never leave
/// this process's memory. `None` if `bytes` is too short to hold the header.
fn skip_checksum(bytes: &mut [u8]) -> Option<()> {
    bytes.get_mut(1..5)?.fill(0xFF);
    Some(())
}

/// The bootstrap's function (the one that makes the control object), from the core loaded and
/// run in this VM as it is built: from bytecode, or from source if compiling failed.
pub(crate) fn load_bootstrap<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    match Part::Core.bytecode() {
        Some(bytes) => run_bytecode(ctx, bytes),
        None => {
            crate::stats::bootstrap_compiled(1);
            ctx.eval(Part::Core.source())
        }
    }
}

/// The function of a part loaded on first use (`hostPart`), run in this VM, possibly deep in
/// guest code. Each call loads a new copy (the bootstrap calls again only after a load failed).
/// Only from bytecode, and never through rquickjs's `eval`: with the `parallel` feature that
/// moves the runtime's stack top to the current stack pointer, which, called from deep in guest
/// code, would extend the guest's stack limit by that depth.
pub(crate) fn load_part<'js>(ctx: &Ctx<'js>, part: Part) -> rquickjs::Result<Function<'js>> {
    run_bytecode(ctx, part.bytecode().ok_or(rquickjs::Error::Unknown)?)
}

/// Reads a part's script from `bytes` and runs it: its value is the part's function. A script
/// rather than a module: no module record, namespace or evaluation promise to make per load.
fn run_bytecode<'js>(ctx: &Ctx<'js>, bytes: &'static [u8]) -> rquickjs::Result<Function<'js>> {
    let ctx_ptr = ctx.as_raw().as_ptr();
    // SAFETY: `bytes` is the unmodified output of `JS_WriteObject` for a part's script, made by
    // `compile_alone` above with this very QuickJS build: in this process, or ahead of time in a
    // shipped file whose header names this build (`Part::shipped`). So it is well-formed
    // bytecode of the format `JS_ReadObject` expects. Nothing else can write to it: it is private
    // to this module and immutable once initialized. `ctx` is live and current on this thread.
    // `JS_EvalFunction` takes the function bytecode it is given (and frees it); the value it
    // answers is handed to rquickjs, which releases it.
    let value = unsafe {
        let script = qjs::JS_ReadObject(
            ctx_ptr,
            bytes.as_ptr(),
            bytes.len() as _,
            qjs::JS_READ_OBJ_BYTECODE as i32,
        );
        if qjs::JS_IsException(script) {
            return Err(rquickjs::Error::Exception);
        }
        if qjs::JS_VALUE_GET_TAG(script) != qjs::JS_TAG_FUNCTION_BYTECODE {
            qjs::JS_FreeValue(ctx_ptr, script);
            return Err(rquickjs::Error::Unknown);
        }
        let value = qjs::JS_EvalFunction(ctx_ptr, script);
        if qjs::JS_IsException(value) {
            return Err(rquickjs::Error::Exception);
        }
        Value::from_raw(ctx.clone(), value)
    };
    value.into_function().ok_or(rquickjs::Error::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_written_without_source_or_checksum() {
        let core = Part::Core.bytecode().unwrap();
        // Text only the source holds (a comment) is not written.
        let comment = b"Trusted bootstrap of one code mode run";
        assert!(
            Part::Core
                .source()
                .as_bytes()
                .windows(comment.len())
                .any(|w| w == comment)
        );
        assert!(!core.windows(comment.len()).any(|w| w == comment));
        // Property names stay.
        assert!(core.windows(b"hostCall".len()).any(|w| w == b"hostCall"));
        assert_eq!(core[1..5], [0xFF; 4]);
    }

    /// Set to rewrite the shipped files from the sources instead of checking them.
    const WRITE_SHIPPED: &str = "CODEMODE_WRITE_BYTECODE";

    /// Every shipped file is what this engine build writes for the part's source today: stale
    /// files would make every process compile the parts again. After an edit of a part's source
    /// or of the engine: `CODEMODE_WRITE_BYTECODE=1 cargo test -p codemode-engine --lib
    /// shipped_bytecode`.
    #[test]
    fn the_shipped_bytecode_is_what_this_engine_compiles() {
        let write = std::env::var_os(WRITE_SHIPPED).is_some();
        for part in Part::ALL {
            let compiles = crate::bootstrap_compiles();
            let [compiled] = compile_alone([part]).unwrap();
            assert!(
                crate::bootstrap_compiles() > compiles,
                "each compile is counted"
            );
            let file = part.file_for(&compiled.unwrap());
            let name = ["core", "globals", "readings", "cut"][part as usize];
            let path = format!(
                "{}/src/bootstrap/compiled/{name}.bin",
                env!("CARGO_MANIFEST_DIR")
            );
            if write {
                std::fs::write(&path, &file).unwrap();
                continue;
            }
            assert!(
                part.shipped_file() == file.as_slice(),
                "{path} is stale: run `{WRITE_SHIPPED}=1 cargo test -p codemode-engine --lib \
                 shipped_bytecode`, then rebuild"
            );
            assert_eq!(part.shipped(), Some(&file[SHIPPED_HEADER..]));
        }
    }

    #[test]
    fn bytecode_of_another_engine_or_source_is_not_loaded() {
        let file = Part::Core.shipped_file();
        assert!(Part::Core.loadable(file).is_some());
        // Another engine build (a byte of the identity), an edited source (a byte of its hash),
        // a damaged file (a byte of the bytecode's hash, or of the bytecode), a file too short
        // for its header.
        for flipped in [0, 7, 8, 15, 16, 23, SHIPPED_HEADER, file.len() - 1] {
            let mut other = file.to_vec();
            other[flipped] ^= 1;
            assert_eq!(Part::Core.loadable(&other), None, "byte {flipped}");
        }
        assert_eq!(Part::Core.loadable(&file[..SHIPPED_HEADER - 1]), None);
        // A part's file is not another part's.
        assert_eq!(Part::Globals.loadable(file), None);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(b"ab"), fnv1a(b"ba"));
    }

    #[test]
    fn every_part_also_compiles_in_the_process() {
        for part in Part::ALL {
            let compiled = part.compiled_here().unwrap();
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let loaded = run_bytecode(&ctx, compiled).unwrap();
                assert!(loaded.get::<_, u32>("length").unwrap() >= 1);
            });
        }
    }

    #[test]
    fn every_part_loads_from_bytecode_and_compiles_from_source() {
        for (part, length) in [
            (Part::Core, 2),
            (Part::Globals, 1),
            (Part::Readings, 1),
            (Part::Cut, 1),
        ] {
            assert!(part.bytecode().is_some_and(|bytes| !bytes.is_empty()));
            // The index the bootstrap names it by (`GLOBALS_PART` and so on) finds it.
            assert_eq!(Part::from_index(part as u32), Some(part));
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let loaded = if part == Part::Core {
                    load_bootstrap(&ctx).unwrap()
                } else {
                    load_part(&ctx, part).unwrap()
                };
                assert_eq!(loaded.get::<_, u32>("length").unwrap(), length);
                // A part loads again (a new copy) after a failed attempt.
                if part != Part::Core {
                    let again = load_part(&ctx, part).unwrap();
                    assert_eq!(again.get::<_, u32>("length").unwrap(), length);
                }
            });
            let runtime = Runtime::new().unwrap();
            let context = Context::full(&runtime).unwrap();
            context.with(|ctx| {
                let compiled: Function<'_> = ctx.eval(part.source()).unwrap();
                assert_eq!(compiled.get::<_, u32>("length").unwrap(), length);
            });
        }
    }
}
