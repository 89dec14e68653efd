//! Requests an attacker would send (issue 40): each ends in a clear error
//! or a correct grammar, never in a crash, a file read or a stall.
//!
//! Compilations run on threads of 2 MiB of stack, the default for spawned
//! threads (a server's worker pool), so that recursion on the depth of the
//! input shows as a crash here.
//!
//! The allocator is jemalloc, the one the `xg` binary ships with (the
//! Python extension uses mimalloc): the time bounds below are the
//! compiler's. glibc's malloc consolidates its free lists when a large
//! block is freed, 10–40 ms at a time in the largest compilation here, and
//! no check inside the compiler can cut that short.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use xg_compiler::json_schema::{self, MAX_JSON_DEPTH};
use xg_compiler::{
    CompileCache, Diagnostics, Limits, MAX_FILE_BYTES, Request, Severity, Sources, pipeline, tools,
};
use xg_runtime::{Grammar, Matcher};

/// The allocator the `xg` binary ships with (see the module's comment).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Stack of the threads the compilations below run on.
const SMALL_STACK: usize = 2 << 20;

/// Runs `f` on a thread of [`SMALL_STACK`] bytes of stack.
fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(SMALL_STACK)
            .spawn_scoped(scope, f)
            .expect("a thread")
            .join()
            .expect("no panic")
    })
}

/// Limits that leave room for a debug build: these tests are about what
/// comes back, not how fast.
fn roomy() -> Limits {
    Limits {
        time: Some(Duration::from_secs(120)),
        ..Limits::default()
    }
}

/// The tests here take turns: several at once on a 2-core machine slow each
/// other, and some bound time (the six 15,000-property tools, 1.4 s alone,
/// ran past their 2 s limit while other tests compiled beside them).
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This test's turn among those that bound time.
fn timed() -> std::sync::MutexGuard<'static, ()> {
    TIMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The grammar of `schema`, or its error messages joined.
fn schema_grammar(schema: &Value) -> Result<Arc<Grammar>, String> {
    schema_within(schema, &roomy())
}

/// The grammar of the structural tag `tag`, or its error messages joined.
fn tag_grammar(tag: &Value) -> Result<Arc<Grammar>, String> {
    let mut request = Request::new(&roomy(), &CompileCache::default());
    let file = request.add("tag.json", "");
    pipeline::structural_tag(&mut request, tag, file)
        .map(Arc::new)
        .ok_or_else(|| errors(&request.diagnostics))
}

fn errors(diagnostics: &Diagnostics) -> String {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{} ({})", d.message, d.primary.message))
        .collect::<Vec<_>>()
        .join("\n")
}

fn accepts(grammar: &Arc<Grammar>, text: &str) -> bool {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    matcher.accept_str(text).is_ok() && matcher.can_terminate()
}

#[test]
fn a_required_property_name_of_10000_characters_compiles_exactly() {
    let _turn = timed();
    let name = "k".repeat(10_000);
    let schema = json!({"type": "object", "required": [name]});
    let grammar = on_small_stack(|| schema_grammar(&schema)).expect("compiles");
    let short = &name[..9_999];
    assert!(accepts(&grammar, &format!(r#"{{"{name}": 1}}"#)));
    // Other names, however close to the required one, are extra properties.
    assert!(accepts(
        &grammar,
        &format!(r#"{{"{name}": 1, "{short}": 2, "{name}k": 3}}"#)
    ));
    assert!(!accepts(&grammar, &format!(r#"{{"{short}": 1}}"#)));
    assert!(!accepts(
        &grammar,
        &format!(r#"{{"{name}": 1, "{name}": 2}}"#)
    ));
}

#[test]
fn five_thousand_prefix_items_compile_exactly() {
    let _turn = timed();
    let items: Vec<Value> = (0..5_000).map(|_| json!({"type": "integer"})).collect();
    let schema = json!({"type": "array", "prefixItems": items, "items": false, "minItems": 2});
    let grammar = on_small_stack(|| schema_grammar(&schema)).expect("compiles");
    let list = |n: usize| format!("[{}]", vec!["1"; n].join(", "));
    for n in [2, 33, 2_345, 5_000] {
        assert!(accepts(&grammar, &list(n)), "{n} items");
    }
    for n in [0, 1, 5_001] {
        assert!(!accepts(&grammar, &list(n)), "{n} items");
    }
    assert!(!accepts(&grammar, "[1, 2, \"x\"]"));
}

/// A value `depth` arrays deep (`[[[…]]]`), built and dropped by the
/// caller (serde_json drops it recursively).
fn nested_arrays(depth: usize) -> Value {
    let mut value = json!("leaf");
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[test]
fn values_nested_deeper_than_the_limit_are_refused_with_their_pointer() {
    let _turn = timed();
    let deep = nested_arrays(MAX_JSON_DEPTH + 1);
    let mut pointer = String::from("#");
    for _ in 0..MAX_JSON_DEPTH {
        pointer.push_str("/0");
    }
    assert_eq!(json_schema::too_deep(&deep), Some(pointer));
    assert_eq!(json_schema::too_deep(&nested_arrays(MAX_JSON_DEPTH)), None);
}

#[test]
fn deep_values_handed_over_in_memory_are_errors_not_crashes() {
    let _turn = timed();
    // Deep enough to overflow any recursive walk on a 2 MiB stack; built
    // and dropped on a thread with room for serde_json's own drop.
    let depth = 50_000;
    let outcome = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let schema = json!({"type": "array", "items": {"enum": [nested_arrays(depth)]}});
            let tag = json!({"type": "structural_tag", "format": {"type": "const_string", "value": nested_arrays(depth)}});
            let tool_list = json!([{"type": "function", "function": {"name": "f", "parameters": nested_arrays(depth)}}]);
            on_small_stack(|| {
                let schema_error = schema_grammar(&schema).expect_err("too deep");
                let tag_error = tag_grammar(&tag).expect_err("too deep");
                let tools_error = tools::parse(&tool_list).expect_err("too deep");
                (schema_error, tag_error, tools_error[0].to_string())
            })
        })
        .expect("a thread")
        .join()
        .expect("no panic");
    let (schema_error, tag_error, tools_error) = outcome;
    for (error, at) in [
        (&schema_error, "#/items/enum/0/0/0"),
        (&tag_error, "#/format/value/0/0"),
        (&tools_error, "#/0/function/parameters/0/0"),
    ] {
        assert!(
            error.contains("nested more than 128 levels deep"),
            "{error}"
        );
        assert!(error.contains(at), "{error}");
    }
}

/// A folder of its own under the system's temporary folder, removed when
/// dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("xg-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("base")).expect("a scratch folder");
        Scratch(dir)
    }

    fn write(&self, path: &str, text: &str) -> PathBuf {
        let full = self.0.join(path);
        std::fs::write(&full, text).expect("writable scratch file");
        full
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the text marked as secret holds: no diagnostic may show it.
const SECRET: &str = "s3cr3t";

/// Compiles `text` given in memory with `base` as its folder; the errors
/// as rendered. Unless `trusted`, no diagnostic may show [`SECRET`].
fn compile_request(text: &str, base: Option<&Path>, trusted: bool) -> Result<(), String> {
    let mut request = Request::ahead_of_time();
    let file = match (base, trusted) {
        (Some(base), true) => request
            .sources
            .add_trusted("request.xg", text, base.to_path_buf()),
        _ => request
            .sources
            .add("request.xg", text, base.map(Path::to_path_buf)),
    };
    let grammar = pipeline::grammar(&mut request, file, "root");
    let rendered = request.diagnostics.render(&request.sources, false);
    assert!(
        trusted || !rendered.contains(SECRET),
        "a diagnostic shows the file:\n{rendered}"
    );
    grammar.map(|_| ()).ok_or(rendered)
}

#[test]
fn request_text_reads_no_file_outside_its_folder() {
    let _turn = timed();
    let scratch = Scratch::new("imports");
    // A file outside the folder that is not a grammar: a diagnostic on it
    // would quote its first line.
    let secret = scratch.write("secret.xg", &format!("{SECRET} is not a grammar\n"));
    scratch.write("base/lib.xg", "word ::= \"ok\"\n");
    std::fs::write(scratch.0.join("base/schema.json"), r#"{"type": "integer"}"#).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, scratch.0.join("base/link.xg")).unwrap();
    let base = scratch.0.join("base");
    let absolute = secret.display().to_string();

    // Inside the folder: allowed.
    compile_request(
        "import \"lib.xg\" as l;\nroot ::= l.word\n",
        Some(&base),
        false,
    )
    .expect("an import inside the folder");
    compile_request("root ::= %json \"schema.json\"\n", Some(&base), false)
        .expect("a schema inside the folder");

    let refused = [
        (format!("import \"{absolute}\" as s;\nroot ::= s.x\n"), None),
        (
            format!("import \"{absolute}\" as s;\nroot ::= s.x\n"),
            Some(&base),
        ),
        (
            "import \"../secret.xg\" as s;\nroot ::= s.x\n".to_string(),
            Some(&base),
        ),
        (
            "import \"./../base/../secret.xg\" as s;\nroot ::= s.x\n".to_string(),
            Some(&base),
        ),
        (format!("root ::= %json \"{absolute}\"\n"), None),
        ("root ::= %json \"../secret.xg\"\n".to_string(), Some(&base)),
        (
            "import \"lib.xg\" as l;\nroot ::= l.word\n".to_string(),
            None,
        ),
    ];
    for (text, base) in &refused {
        let error = compile_request(text, base.map(PathBuf::as_path), false).expect_err(text);
        assert!(
            error.contains("reads only files inside its folder")
                || error.contains("reads no files"),
            "{text}: {error}"
        );
    }
    #[cfg(unix)]
    {
        let error = compile_request(
            "import \"link.xg\" as s;\nroot ::= s.x\n",
            Some(&base),
            false,
        )
        .expect_err("a link out of the folder");
        assert!(error.contains("leads out of it"), "{error}");
    }
    // Text its author wrote (a `grammar!`) imports like a file in its
    // folder: the file is read, and the diagnostic on it shows it.
    let error = compile_request(
        "import \"../secret.xg\" as s;\nroot ::= s.x\n",
        Some(&base),
        true,
    )
    .expect_err("not a grammar");
    assert!(error.contains(SECRET), "{error}");
}

#[test]
fn files_larger_than_the_limit_are_not_read() {
    let _turn = timed();
    let scratch = Scratch::new("large");
    let large = std::fs::File::create(scratch.0.join("base/large.xg")).unwrap();
    // Sparse: nothing is written, the size alone must refuse it.
    large.set_len(MAX_FILE_BYTES + 1).unwrap();
    let base = scratch.0.join("base");
    for text in [
        "import \"large.xg\" as l;\nroot ::= l.x\n",
        "root ::= %json \"large.xg\"\n",
    ] {
        let error = compile_request(text, Some(&base), false).expect_err(text);
        assert!(error.contains("larger than"), "{text}: {error}");
    }
}

#[cfg(unix)]
#[test]
fn device_files_are_not_read() {
    let _turn = timed();
    let scratch = Scratch::new("devices");
    let grammar = scratch.write("zero.xg", "root ::= %json \"/dev/zero\"\n");
    let mut request = Request::ahead_of_time();
    let file = request
        .sources
        .load(&grammar, &mut request.diagnostics)
        .unwrap();
    assert!(pipeline::grammar(&mut request, file, "root").is_none());
    assert!(
        errors(&request.diagnostics).contains("is not a file"),
        "{}",
        errors(&request.diagnostics)
    );
}

/// A schema that is only itself (`{"$ref": "#"}`, or a cycle of `$ref`s
/// and `allOf`s with no other keyword) defines nothing: an error at the
/// schema the cycle comes back to, not "any value" reported as enforced.
/// A recursive schema that constrains something on the way compiles.
#[test]
fn a_ref_cycle_with_nothing_else_is_refused() {
    let _turn = timed();
    for (schema, at) in [
        (json!({"$ref": "#"}), "#:"),
        (
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            "#/$defs/a:",
        ),
    ] {
        let error = on_small_stack(|| schema_grammar(&schema)).expect_err("refused");
        assert!(error.contains("leads back to itself"), "{error}");
        let mut sources = Sources::new();
        let file = sources.add("schema.json", schema.to_string(), None);
        let mut diagnostics = Diagnostics::new();
        let generated = json_schema::generate(
            &schema,
            &json_schema::Options::default(),
            &xg_compiler::Budget::new(roomy()),
        );
        json_schema::diagnose(&generated, &sources, file, &mut diagnostics);
        assert!(
            errors(&diagnostics).starts_with(at),
            "{}",
            errors(&diagnostics)
        );
    }
    for schema in [
        json!({"$ref": "#", "type": "object"}),
        json!({"type": "object", "properties": {"child": {"$ref": "#"}}}),
        json!({"$defs": {"a": {}}, "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}),
    ] {
        on_small_stack(|| schema_grammar(&schema)).unwrap_or_else(|e| panic!("{schema}: {e}"));
    }
}

/// `.xg` text from a request compiles within the caller's limits, the
/// schemas it embeds (`%json`) included: a rule limit and a cancel flag
/// hold there too (the embedded schema ran under a fresh default budget
/// before, and `.xg` text had no limits at all).
#[test]
fn request_grammars_and_their_schemas_compile_within_the_callers_limits() {
    let _turn = timed();
    let properties: serde_json::Map<String, Value> = (0..40)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            )
        })
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let text = format!("root ::= \"result: \" %json {schema}\n");
    let compile = |limits: &Limits| {
        let mut request = Request::new(limits, &CompileCache::default());
        let file = request.add("request.xg", text.as_str());
        let grammar = pipeline::grammar_within(&mut request, file, "root");
        grammar
            .map(|_| ())
            .ok_or_else(|| errors(&request.diagnostics))
    };
    compile(&roomy()).expect("compiles within the default rule limit");
    let few_rules = Limits {
        max_rules: 10,
        ..roomy()
    };
    let error = compile(&few_rules).expect_err("more than 10 rules");
    assert!(error.contains("more than 10 rules"), "{error}");
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let cancelled = Limits {
        cancel: Some(cancel),
        ..roomy()
    };
    let error = compile(&cancelled).expect_err("cancelled");
    assert!(error.contains("cancelled"), "{error}");
}

/// Text with an error on every line makes thousands of diagnostics; the
/// first `MAX_DIAGNOSTICS` are kept and rendered, the rest counted in one
/// line (10,000 of them took 2.3 s to render, 22 s in the fuzzer's build).
#[test]
fn diagnostics_past_the_cap_are_counted_not_kept() {
    let _turn = timed();
    let text = "root ::= \"a\"\n".to_string() + &"x ::= ]\n".repeat(5_000);
    let mut request = Request::new(&roomy(), &CompileCache::default());
    let file = request.add("request.xg", text);
    let grammar = pipeline::grammar_within(&mut request, file, "root");
    assert!(grammar.is_none());
    assert_eq!(
        request.diagnostics.iter().count(),
        xg_compiler::MAX_DIAGNOSTICS
    );
    assert!(
        request.diagnostics.error_count() >= 5_000,
        "{}",
        request.diagnostics.error_count()
    );
    let rendered = request.diagnostics.render(&request.sources, false);
    // The kept ones are all errors (each line's): the rest is counted.
    let more = request.diagnostics.error_count() - xg_compiler::MAX_DIAGNOSTICS;
    let warnings = request.diagnostics.warning_count();
    assert!(
        rendered.ends_with(&format!(
            "… and {more} more errors and {warnings} more warnings, not shown (the first {} are)\n",
            xg_compiler::MAX_DIAGNOSTICS
        )),
        "{}",
        &rendered[rendered.len().saturating_sub(300)..]
    );
}

/// A long pattern searched for anywhere in a string (JSON Schema's
/// `pattern` is unanchored) whose text repeats itself: its deterministic
/// automaton needs subsets as long as the pattern (a 20,000-character
/// pattern took 1.8 GB to determinize, 200,000 ran out of memory), and the
/// nondeterministic one rows as long (a matching output of 60,000 bytes ran
/// a server out of memory). It is refused, quickly; a pattern of a few
/// hundred characters still compiles exactly.
#[test]
fn long_periodic_patterns_are_refused_not_followed_without_bound() {
    let _turn = timed();
    let long = "abc".repeat(3_000);
    let error = on_small_stack(|| schema_grammar(&json!({"type": "string", "pattern": long})))
        .expect_err("refused");
    assert!(error.contains("cannot be made deterministic"), "{error}");
    let regex = format!(".*{long}");
    let mut request = Request::new(&roomy(), &CompileCache::default());
    let file = request.add("regex", regex.as_str());
    let grammar = pipeline::regex(&mut request, file, xg_compiler::regex::Options::default());
    assert!(grammar.is_none());
    assert!(errors(&request.diagnostics).contains("cannot be made deterministic"));

    let short = "abc".repeat(300);
    let grammar = schema_grammar(&json!({"type": "string", "pattern": short})).expect("compiles");
    assert!(accepts(&grammar, &format!("\"zz{short}q\"")));
    assert!(!accepts(&grammar, &format!("\"zz{}q\"", &short[1..])));
}

/// The time limit holds inside the schema generator's passes over its
/// rules, not only between rules: a 200,000-character required name took
/// 2.3 s under a 0.5 s limit. Release builds only (a time bound).
#[test]
#[cfg_attr(debug_assertions, ignore = "a time bound: run in release builds")]
fn the_time_limit_holds_inside_the_schema_generator() {
    let _turn = timed();
    let name = "k".repeat(200_000);
    let limits = Limits {
        time: Some(Duration::from_millis(300)),
        ..Limits::default()
    };
    let started = std::time::Instant::now();
    let mut request = Request::new(&limits, &CompileCache::default());
    let file = request.add("schema.json", "");
    let grammar = on_small_stack(|| {
        pipeline::json_schema(
            &mut request,
            &json!({"type": "object", "required": [name]}),
            file,
            &json_schema::Options::default(),
        )
    });
    let elapsed = started.elapsed();
    assert!(grammar.is_none());
    assert!(
        errors(&request.diagnostics).contains("longer than 300ms"),
        "{}",
        errors(&request.diagnostics)
    );
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

/// An ambiguous grammar's work grows with the square of the output
/// (`s ::= s s | "a"`: 5,000 bytes took 254 s to accept). A step past the
/// step budget is refused as over budget, where it ran out, and undone;
/// smaller steps within it go on. The default budget returns in about a
/// second (release builds only: a time bound).
#[test]
fn steps_past_the_step_budget_are_refused_and_undone() {
    let _turn = timed();
    let grammar = common::runtime_grammar("root ::= s\ns ::= s s | \"a\"");
    let mut matcher = Matcher::new(Arc::clone(&grammar));
    matcher.set_step_budget(200_000);
    let refused = matcher.accept_str(&"a".repeat(400)).unwrap_err();
    assert!(refused.is_over_budget(), "{refused}");
    assert!(
        refused.position() > 10 && refused.position() < 400,
        "{refused}"
    );
    assert!(refused.to_string().contains("step budget"), "{refused}");
    assert_eq!((matcher.position(), matcher.steps()), (0, 0));
    for _ in 0..100 {
        matcher.accept_str("a").unwrap();
    }
    assert!(matcher.can_terminate());
    // A grammar refusal is not a budget one.
    let refused = matcher.accept_str("b").unwrap_err();
    assert!(!refused.is_over_budget());
}

/// The default step budget bounds a step of an ambiguous grammar to about
/// a second (release builds: a time bound).
#[test]
#[cfg_attr(debug_assertions, ignore = "a time bound: release builds only")]
fn the_default_step_budget_is_about_a_second() {
    let _turn = timed();
    let grammar = common::runtime_grammar("root ::= s\ns ::= s s | \"a\"");
    let mut matcher = Matcher::new(grammar);
    let started = Instant::now();
    let refused = matcher.accept_str(&"a".repeat(5_000)).unwrap_err();
    assert!(refused.is_over_budget(), "{refused}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Wide requests compile in time linear in their width: an object of
/// 80,000 properties took 8.7 s and came back past a 2 s limit (each name
/// was looked up in lists of all the others), six tools of 15,000
/// properties each 8.9 s (productivity was checked in rounds over 90,000
/// rules, one round per link). Now 20,000 properties compile within the
/// default limit and the six tools within 3 s, and 80,000 properties (1.1 s
/// without a limit) under a limit they exceed return within about 1.2 times
/// it. Release builds only (time bounds).
#[test]
#[cfg_attr(debug_assertions, ignore = "time bounds: release builds only")]
fn wide_objects_and_tool_lists_compile_within_the_limits() {
    let _turn = timed();
    let properties = |count: usize| -> serde_json::Map<String, Value> {
        (0..count)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect()
    };
    // The cache outlives the timing, as a server's does.
    let cache = CompileCache::default();
    let compile_schema = |count: usize, limits: &Limits| {
        let schema = json!({"type": "object", "properties": properties(count)});
        let mut request = Request::new(limits, &cache);
        let file = request.add("schema.json", "");
        let started = Instant::now();
        let grammar = pipeline::json_schema(
            &mut request,
            &schema,
            file,
            &json_schema::Options::default(),
        );
        (
            grammar.ok_or_else(|| errors(&request.diagnostics)),
            started.elapsed(),
        )
    };
    let (grammar, elapsed) = compile_schema(20_000, &Limits::default());
    let grammar = Arc::new(grammar.expect("20,000 properties compile within 2 s"));
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert!(accepts(&grammar, r#"{"p0":1,"p19999":2}"#));
    // Each stage checks the limit as it goes: running out inside the
    // generator, the lowering, the passes or the one large automaton ends
    // the compilation there.
    // Limits well under the 1.1 s that 80,000 properties take here (the
    // first compile of a process 2 s).
    for limit in [Duration::from_millis(500), Duration::from_millis(750)] {
        cache.clear();
        let short = Limits {
            time: Some(limit),
            ..Limits::default()
        };
        let (refused, elapsed) = compile_schema(80_000, &short);
        let error = refused.expect_err("past the limit");
        assert!(error.contains("longer than"), "{error}");
        // 1.14–1.20 times the limit here; the slack is freeing what was
        // built (0.1–0.3 s for this one), which no check can cut short.
        let bound = limit.mul_f64(1.2) + Duration::from_millis(300);
        assert!(elapsed < bound, "{elapsed:?} under {limit:?}");
    }

    let tool = |name: String| {
        json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": properties(15_000)}}})
    };
    let list = Value::Array((0..6).map(|i| tool(format!("tool_{i}"))).collect());
    // 1.4 s alone on the development machine, under the default 2 s; on
    // CI, right after the release build, it ran past 2 s, so the bound here
    // is 3 s (8.9 s before productivity was checked in one pass).
    let limits = Limits {
        time: Some(Duration::from_secs(3)),
        ..Limits::default()
    };
    let mut request = Request::new(&limits, &CompileCache::default());
    let file = request.add("tools.json", "");
    let started = Instant::now();
    let grammar = pipeline::tools(
        &mut request,
        &list,
        file,
        &tools::Options::new(tools::Format::Qwen),
    );
    let elapsed = started.elapsed();
    assert!(grammar.is_some(), "{}", errors(&request.diagnostics));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

/// A tag dispatch's scanner is built from its triggers, stop and excluded
/// strings, following failure links as deep as a string is long from each
/// of its states: an `any_text` excluding a 50 KB string took 4 s to
/// compile (and as long to open as a bundle), a 1 MB one over ten minutes
/// and a gigabyte. Strings past `MAX_DISPATCH_PATTERN` bytes, or past
/// `MAX_DISPATCH_PATTERNS` together, are an error at once; within them the
/// exclusion is exact.
#[test]
fn dispatch_strings_past_the_limits_are_refused_at_once() {
    let _turn = timed();
    let any_text = |excludes: Vec<String>| {
        let started = Instant::now();
        let grammar = tag_grammar(&json!({"type": "structural_tag",
            "format": {"type": "any_text", "excludes": excludes}}));
        assert!(started.elapsed() < Duration::from_secs(1));
        grammar
    };
    let error = any_text(vec!["x".repeat(50_000)]).expect_err("too long");
    assert!(
        error.contains("50000 bytes") && error.contains("longer than 1024"),
        "{error}"
    );
    let many = (0..100)
        .map(|i| format!("{i:04}{}", "y".repeat(1000)))
        .collect();
    let error = any_text(many).expect_err("too much");
    assert!(error.contains("more than 65536"), "{error}");
    let longest = "x".repeat(xg_runtime::MAX_DISPATCH_PATTERN);
    let grammar = any_text(vec![longest.clone()]).expect("within the limit");
    assert!(accepts(&grammar, &longest[1..]));
    assert!(!accepts(&grammar, &format!("a{longest}b")));

    let grammar = format!(
        "root ::= TagDispatch((\"<a>\", x), excludes=(\"{}\"))\nx ::= \"1\"\n",
        "y".repeat(2_000)
    );
    let error = compile_request(&grammar, None, false).expect_err("too long");
    assert!(error.contains("longer than 1024"), "{error}");
}

/// The compile of a JSON Schema within `limits`, or its error messages.
fn schema_within(schema: &Value, limits: &Limits) -> Result<Arc<Grammar>, String> {
    schema_in(schema, limits, &CompileCache::default())
}

/// [`schema_within`] with the compile cache `cache`.
fn schema_in(
    schema: &Value,
    limits: &Limits,
    cache: &CompileCache,
) -> Result<Arc<Grammar>, String> {
    let mut request = Request::new(limits, cache);
    let file = request.add("schema.json", "");
    pipeline::json_schema(&mut request, schema, file, &json_schema::Options::default())
        .map(Arc::new)
        .ok_or_else(|| errors(&request.diagnostics))
}

/// Past `Limits::memory`, a compilation stops where its structures grow:
/// a long literal's automaton (a 7 MB `const` took 1.3 GB and 2 s to run
/// out of time; under the default 256 MiB it is refused in 0.5 s), and the
/// rules a large enum generates. Under the limit the same schemas compile.
#[test]
fn the_memory_limit_holds_where_structures_grow() {
    let _turn = timed();
    let small = Limits {
        memory: Some(4 << 20),
        ..roomy()
    };
    let literal = json!({"const": "x".repeat(400_000)});
    let started = Instant::now();
    let error = schema_within(&literal, &small).expect_err("past 4 MiB");
    assert!(error.contains("needs more than 4 MiB"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let words: Vec<String> = (0..120_000).map(|i| format!("w{i}")).collect();
    let enumeration = json!({"enum": words});
    let error = schema_within(&enumeration, &small).expect_err("past 4 MiB");
    assert!(error.contains("needs more than 4 MiB"), "{error}");
    // With room, both compile and mean what they say.
    let grammar = schema_within(&literal, &roomy()).expect("within the default limit");
    assert!(accepts(&grammar, &format!("\"{}\"", "x".repeat(400_000))));
    assert!(!accepts(&grammar, &format!("\"{}\"", "x".repeat(399_999))));
    let grammar = schema_within(&enumeration, &roomy()).expect("within the default limit");
    assert!(accepts(&grammar, "\"w119999\""));
    assert!(!accepts(&grammar, "\"w120000\""));
}

/// A cancel flag set from another thread while a wide object (80,000
/// properties) compiles stops the compilation wherever it is: every stage
/// counts its work (nodes, edges, items visited) and reads the flag every
/// few thousand units, and what was built is freed on a thread of its own.
/// Flags set every 100 ms from 0.1 to 1.5 s: the compilation returns
/// within 100 ms of each (the target is 50 ms: three runs of this test
/// measured medians of 5–10 ms, 53 ms once and at most 28 ms otherwise;
/// before the checks inside stages it took 15.7 s from a flag set at
/// 100 ms). The compile cache outlives the call, as a
/// server's does: dropping the rules it keeps is the caller's time, not
/// the compilation's. Release builds only (time bounds).
#[test]
#[cfg_attr(debug_assertions, ignore = "time bounds: release builds only")]
fn a_cancel_stops_a_compilation_wherever_it_is() {
    let _turn = timed();
    let properties: serde_json::Map<String, Value> = (0..80_000)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    // In the generator, the lowering, the passes and the automata.
    let mut delays = Vec::new();
    for after in (1..=15).map(|tenths| Duration::from_millis(100 * tenths)) {
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let limits = Limits {
            cancel: Some(Arc::clone(&cancel)),
            time: None,
            ..Limits::default()
        };
        let setter = std::thread::spawn(move || {
            std::thread::sleep(after);
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            Instant::now()
        });
        let cache = CompileCache::default();
        let outcome = schema_in(&schema, &limits, &cache);
        let returned = Instant::now();
        let set = setter.join().unwrap();
        drop(cache);
        // The last flags may come after the compilation is done.
        match outcome {
            Err(error) => {
                assert!(error.contains("cancelled"), "{error}");
                delays.push((returned.saturating_duration_since(set), after));
            }
            Ok(_) => assert!(
                after >= Duration::from_secs(1),
                "not cancelled at {after:?}"
            ),
        }
        // What the cancelled compilation built is freed on threads of its
        // own: let that finish before the next, not to share the cores.
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(delays.len() >= 9, "cancelled {} times", delays.len());
    let late: Vec<_> = delays
        .iter()
        .filter(|(delay, _)| *delay > Duration::from_millis(100))
        .collect();
    assert!(
        late.is_empty(),
        "returned late (delay, flag set at): {late:?}; all: {delays:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
}

/// Long chains compile in time linear in their length, within the default
/// limits: a `.xg` text of 40,000 rules each calling the next (normalizing
/// and productivity were quadratic: 71 s) and a schema of 10,000 `$ref`s
/// each naming the next (rule names grew with the chain's depth: 1.3 GB).
/// Both take well under a second in a release build; the bound is the 2 s
/// default limit. Release builds only (time bounds).
#[test]
#[cfg_attr(debug_assertions, ignore = "time bounds: release builds only")]
fn long_chains_of_rules_and_refs_compile_within_the_default_limits() {
    let _turn = timed();
    let mut text = String::from("root ::= r0\n");
    for i in 0..40_000 {
        let _ = writeln!(text, "r{i} ::= \"a\" r{} | \"b\"", i + 1);
    }
    text.push_str("r40000 ::= \"z\"\n");
    let mut request = Request::new(&Limits::default(), &CompileCache::default());
    let file = request.add("chain.xg", text);
    let started = Instant::now();
    let grammar = pipeline::grammar_within(&mut request, file, "root")
        .map(Arc::new)
        .ok_or_else(|| errors(&request.diagnostics))
        .expect("a chain of 40,000 rules compiles within the default limits");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(accepts(&grammar, "aab"));
    assert!(accepts(&grammar, &format!("{}b", "a".repeat(100))));
    assert!(!accepts(&grammar, "aa"));

    let mut definitions = serde_json::Map::new();
    for i in 0..10_000 {
        definitions.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/definitions/d{}", i + 1)}),
        );
    }
    definitions.insert("d10000".into(), json!({"type": "integer"}));
    let schema = json!({"definitions": definitions, "$ref": "#/definitions/d0"});
    let started = Instant::now();
    let grammar = schema_within(&schema, &Limits::default())
        .expect("a chain of 10,000 $refs compiles within the default limits");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(accepts(&grammar, "12"));
    assert!(!accepts(&grammar, "\"12\""));
}

/// White space rules are sized when a grammar is loaded (a run of at most
/// 32 bytes of it is a short rule). Thirty rules that each call the next
/// twice, all white space: each is looked at once, so loading takes
/// milliseconds (walking every path took 20 s), and the grammar matches.
/// Release builds only (a time bound).
#[test]
#[cfg_attr(debug_assertions, ignore = "a time bound: release builds only")]
fn white_space_rules_calling_each_other_are_sized_once_each() {
    let _turn = timed();
    let mut text = String::from("root ::= r0 \"x\"\n");
    for level in 0..30 {
        let next = level + 1;
        writeln!(text, "r{level} ::= r{next} r{next} | \"\"").unwrap();
    }
    text.push_str("r30 ::= \" \" | \"\"\n");
    let started = Instant::now();
    let grammar = on_small_stack(|| common::runtime_grammar(&text));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(accepts(&grammar, "   x"));
    assert!(!accepts(&grammar, "  y"));
}
