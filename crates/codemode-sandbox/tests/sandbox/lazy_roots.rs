//! Roots built on first read (`tools`, `ALL_TOOLS`, ...) are indistinguishable to the guest from
//! roots installed before the program ran: the same cells give the same answers whether a root is
//! lazy (the default for a frozen root without aliases) or eager (an alias forces it).

use codemode_sandbox::{GuestSetup, LegEnd, PreparedSetup};

use crate::support::{TestHost, deadline, limits, render, runtime, setup};

/// The test setup with `tools` and `ALL_TOOLS` made eager: an alias touching a root keeps it
/// out of the lazy set.
fn eager_setup() -> GuestSetup {
    let mut setup = setup();
    setup
        .aliases
        .push((vec!["toolsAlias".into()], vec!["tools".into()]));
    setup
        .aliases
        .push((vec!["catalogAlias".into()], vec!["ALL_TOOLS".into()]));
    setup
}

fn run(program: &str, setup: impl Into<PreparedSetup>) -> String {
    let (host, _cancelled) = TestHost::new();
    let limits = limits();
    let step = runtime().block_on(async {
        match limits.start(program, setup, host) {
            Ok(mut run) => run.drive(deadline(&limits)).await,
            Err(error) => LegEnd::Failed {
                error,
                output: Vec::new(),
            },
        }
    });
    render(&step)
}

/// Runs `program` with lazy and with eager roots and checks both give `expect`.
#[track_caller]
fn same_lazy_or_eager(program: &str, expect: &str) {
    assert_eq!(run(program, setup()), expect, "lazy roots: {program}");
    assert_eq!(
        run(program, eager_setup()),
        expect,
        "eager roots: {program}"
    );
}

#[test]
fn identity_freezing_and_order_are_those_of_an_eager_root() {
    same_lazy_or_eager(
        "const t = tools; const a = ALL_TOOLS; \
         return [t === tools, a === ALL_TOOLS, tools.call === t.call, \
                 Object.isFrozen(tools), Object.isFrozen(tools.echo), Object.isFrozen(ALL_TOOLS), \
                 Object.isFrozen(ALL_TOOLS[0]), Object.keys(tools), \
                 Object.getOwnPropertyNames(tools), JSON.stringify(ALL_TOOLS), \
                 Object.entries(Object.getOwnPropertyDescriptors(tools)) \
                   .map(([k, d]) => [k, d.writable, d.enumerable, d.configurable, typeof d.value]), \
                 Object.getPrototypeOf(tools) === Object.prototype, Array.isArray(ALL_TOOLS)]",
        r#"completed [true,true,true,true,true,true,true,["call","echo","search"],["call","echo","search"],"[{\"id\":\"openclaw:core:echo\",\"name\":\"echo\"}]",[["call",false,true,false,"function"],["echo",false,true,false,"function"],["search",false,true,false,"function"]],true,true]"#,
    );
    // Writes and redefinitions fail the same way, before and after the first read.
    same_lazy_or_eager(
        "'use strict'; const errors = []; \
         for (const f of [() => { tools = {} }, () => { Object.defineProperty(globalThis, 'tools', { value: 1 }) }, \
                          () => { delete globalThis.tools }, () => { Object.defineProperty(tools, 'x', { value: 1 }) }, \
                          () => { tools.echo = 1 }, () => { ALL_TOOLS.push(1) }]) { \
           try { f(); errors.push('no error') } catch (e) { errors.push(e.name) } \
         } \
         return [errors, typeof tools.echo, ALL_TOOLS.length]",
        r#"completed [["TypeError","TypeError","TypeError","TypeError","TypeError","TypeError"],"function",1]"#,
    );
}

#[test]
fn tampering_before_the_first_read_changes_nothing() {
    // Prototype accessors named like the root's members, forged built-ins, and a poisoned
    // Object.prototype: the root is built from captured built-ins by definition, never assignment.
    // (Not an accessor on an array index: QuickJS's own JSON.stringify pushes onto an internal
    // array, so such an accessor breaks the guest's own serialization, lazy roots or not.)
    same_lazy_or_eager(
        "'use strict'; \
         for (const k of ['call', 'echo', 'search', 'id', 'name', 'x']) \
           Object.defineProperty(Object.prototype, k, { get() { return 'forged' }, set() { throw new Error('setter ran') } }); \
         JSON.parse = () => ({ forged: true }); Object.freeze = (o) => o; Object.defineProperty = () => { throw new Error('forged') }; \
         Reflect.ownKeys = () => []; Object.create = () => ({}); \
         return [Object.keys(tools), typeof tools.echo, ALL_TOOLS[0].id, Object.isFrozen(tools), \
                 await tools.echo({ x: 1 })]",
        r#"completed [["call","echo","search"],"function","openclaw:core:echo",true,["openclaw:core:echo",{"x":1}]]"#,
    );
}

#[test]
fn first_reads_inside_getters_during_serialization_and_calls() {
    // The first read of a root happens inside the bootstrap's own work: serializing a value for
    // json(), encoding the arguments of a bridge call, or the result adapter.
    same_lazy_or_eager(
        "json({ get n() { return ALL_TOOLS.length }, get k() { return Object.keys(tools) } }); \
         const echoed = await host.echo({ get v() { return ALL_TOOLS[0].name } }); \
         return { get late() { return [typeof tools.call, ALL_TOOLS.length] }, echoed }",
        r#"completed {"echoed":{"v":"echo"},"late":["function",1]} output=[{"type":"json","value":{"k":["call","echo","search"],"n":1}}]"#,
    );
}

#[test]
fn a_first_read_that_runs_out_of_stack_is_retried_by_the_next() {
    // `reach` finds the deepest recursion that still gets to the bottom; `down` has the same
    // frames and reads `tools` at the bottom, where almost no stack is left: the first read
    // then runs out of stack inside the root's build (`inside`, the bottom was reached). The
    // error is catchable, and a later read builds the root whole.
    let program = "let reached = false; \
         function reach(n) { if (n === 0) { reached = true; return 0 } return reach(n - 1) } \
         function down(n) { if (n === 0) { reached = true; return Object.keys(tools).length } return down(n - 1) } \
         let lo = 0, hi = 1 << 20; \
         while (lo < hi) { const mid = (lo + hi + 1) >> 1; try { reach(mid); lo = mid } catch { hi = mid - 1 } } \
         let first = 'never'; \
         for (let n = lo; n > lo - 64 && first === 'never'; n--) { \
           reached = false; \
           try { down(n); first = 'built' } catch (e) { if (reached) first = 'inside ' + e.name } } \
         return [first, Object.keys(tools), Object.isFrozen(tools), typeof tools.echo]";
    assert_eq!(
        run(program, setup()),
        r#"completed ["inside RangeError",["call","echo","search"],true,"function"]"#
    );
}

#[test]
fn a_prepared_setup_serves_many_runs_each_with_fresh_roots() {
    let prepared = PreparedSetup::new(setup());
    for _ in 0..3 {
        assert_eq!(
            run(
                "'use strict'; const before = typeof globalThis.leak; globalThis.leak = 1; \
                 try { tools.echo.mark = 1 } catch (e) {} \
                 return [before, Object.keys(tools).length, tools.echo.mark === undefined]",
                prepared.clone(),
            ),
            r#"completed ["undefined",3,true]"#
        );
    }
}
