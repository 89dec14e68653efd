//! `xg`: the xg command-line tool.
//!
//! - `xg` (no arguments): the main job on the embedded example grammars.
//! - `xg check FILE…`: check grammars and print diagnostics.
//! - `xg fmt FILE…`: print grammars in canonical form.

mod inspect;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use xg_compiler::{Diagnostics, EXAMPLES, FileId, Sources, pipeline, syntax};

/// xg: a structured-generation engine for LLM inference.
#[derive(Parser)]
#[command(name = "xg", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// When to colour diagnostics.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Subcommand)]
enum Command {
    /// Check grammars: parse, resolve names and imports, report every problem.
    Check {
        /// The `.xg` files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The entry rule.
        #[arg(long, default_value = "root")]
        root: String,
        /// Output style of the diagnostics.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Compile a grammar and show its automata: per-rule node and edge
    /// counts and structural hashes, or one rule's automaton as Graphviz.
    Inspect {
        /// The `.xg` file.
        file: PathBuf,
        /// The entry rule.
        #[arg(long, default_value = "root")]
        root: String,
        /// Print this rule's automaton in Graphviz dot format instead.
        #[arg(long, value_name = "RULE")]
        dot: Option<String>,
    },
    /// Print grammars in canonical form.
    Fmt {
        /// The `.xg` files to format.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Rewrite the files in place instead of printing them.
        #[arg(long, conflicts_with = "check")]
        write: bool,
        /// Print nothing; fail if a file is not in canonical form.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// rustc-style text with source excerpts.
    Human,
    /// One JSON object with every diagnostic (file, line, column, byte offsets).
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stderr().is_terminal(),
    };
    let result = match cli.command {
        None => Ok(demo()),
        Some(Command::Inspect { file, root, dot }) => inspect(&file, &root, dot.as_deref(), color),
        Some(Command::Check {
            files,
            root,
            format,
        }) => check(&files, &root, format, color),
        Some(Command::Fmt {
            files,
            write,
            check,
        }) => fmt(&files, write, check, color),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// `xg check`: true if no file has errors.
fn check(files: &[PathBuf], root: &str, format: Format, color: bool) -> Result<bool> {
    let mut sources = Sources::new();
    let mut diagnostics = Diagnostics::new();
    let mut summaries = Vec::new();
    for path in files {
        let file = sources
            .load(path, &mut diagnostics)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let mut file_diagnostics = Diagnostics::new();
        let grammar = pipeline::check(&mut sources, file, root, &mut file_diagnostics);
        summaries.push((path.display().to_string(), grammar.map(|g| g.rules.len())));
        for diagnostic in file_diagnostics.iter() {
            diagnostics.push(diagnostic.clone());
        }
    }
    match format {
        Format::Human => {
            eprint!("{}", diagnostics.render(&sources, color));
            for (name, rules) in &summaries {
                match rules {
                    Some(rules) => eprintln!("{name}: ok ({rules} rules)"),
                    None => eprintln!("{name}: failed"),
                }
            }
            let (errors, warnings) = (diagnostics.error_count(), diagnostics.warning_count());
            if errors + warnings > 0 {
                eprintln!("{errors} error(s), {warnings} warning(s)");
            }
        }
        Format::Json => {
            let report = serde_json::json!({
                "errors": diagnostics.error_count(),
                "warnings": diagnostics.warning_count(),
                "diagnostics": diagnostics.to_json(&sources),
            });
            println!("{report:#}");
        }
    }
    Ok(!diagnostics.has_errors())
}

/// `xg inspect`: true if the grammar compiled (and the rule exists, with `--dot`).
fn inspect(path: &Path, root: &str, dot: Option<&str>, color: bool) -> Result<bool> {
    let mut sources = Sources::new();
    let mut diagnostics = Diagnostics::new();
    let file = sources
        .load(path, &mut diagnostics)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let compiled = pipeline::compile(&mut sources, file, root, &mut diagnostics);
    eprint!("{}", diagnostics.render(&sources, color));
    let Some(compiled) = compiled else {
        return Ok(false);
    };
    let grammar = &compiled.automata;
    if let Some(name) = dot {
        let Some(rule) = grammar.rules.iter().find(|r| r.name == name) else {
            let names: Vec<&str> = grammar.rules.iter().map(|r| r.name.as_str()).collect();
            eprintln!("error: no rule `{name}`; rules: {}", names.join(", "));
            return Ok(false);
        };
        print!("{}", inspect::dot(grammar, rule));
        return Ok(true);
    }
    print!(
        "{}",
        inspect::summary(&path.display().to_string(), &compiled)
    );
    Ok(true)
}

/// `xg fmt`: true if every file parsed (and, with `--check`, was canonical).
fn fmt(files: &[PathBuf], write: bool, check: bool, color: bool) -> Result<bool> {
    let mut all_ok = true;
    for path in files {
        let mut sources = Sources::new();
        let mut diagnostics = Diagnostics::new();
        let file = sources
            .load(path, &mut diagnostics)
            .with_context(|| format!("cannot read `{}`", path.display()))?;
        let Some(formatted) = format_file(&sources, file, &mut diagnostics) else {
            eprint!("{}", diagnostics.render(&sources, color));
            eprintln!("{}: not formatted (syntax errors)", path.display());
            all_ok = false;
            continue;
        };
        if check {
            if formatted != sources.text(file) {
                eprintln!("{}: not in canonical form", path.display());
                all_ok = false;
            }
        } else if write {
            if formatted != sources.text(file) {
                std::fs::write(path, &formatted)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
            }
        } else {
            print!("{formatted}");
        }
    }
    Ok(all_ok)
}

/// The canonical text of `file`, or `None` if it has syntax errors.
fn format_file(sources: &Sources, file: FileId, diagnostics: &mut Diagnostics) -> Option<String> {
    let ast = syntax::parse(file, sources.text(file), diagnostics);
    (!diagnostics.has_errors()).then(|| syntax::print(&ast))
}

/// The main job on the embedded default: check and format the example grammars.
fn demo() -> bool {
    println!(
        "xg {} — checking the embedded example grammars\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut all_ok = true;
    for (name, text) in EXAMPLES {
        let mut sources = Sources::new();
        let file = sources.add(*name, *text, None);
        let mut diagnostics = Diagnostics::new();
        let started = std::time::Instant::now();
        let grammar = pipeline::check(&mut sources, file, "root", &mut diagnostics);
        let elapsed = started.elapsed();
        print!(
            "{}",
            diagnostics.render(&sources, std::io::stdout().is_terminal())
        );
        match grammar {
            Some(grammar) => println!(
                "  {name}: ok — {} rules (with imports), checked in {:.0} µs",
                grammar.rules.len(),
                elapsed.as_secs_f64() * 1e6
            ),
            None => {
                println!("  {name}: FAILED");
                all_ok = false;
            }
        }
    }
    let (name, text) = EXAMPLES[1];
    let mut sources = Sources::new();
    let file = sources.add(name, text, None);
    let mut diagnostics = Diagnostics::new();
    if let Some(formatted) = format_file(&sources, file, &mut diagnostics) {
        println!("\n`xg fmt {name}`:\n");
        print!("{formatted}");
    }
    println!("\nNext: `xg check FILE.xg` and `xg fmt FILE.xg` on your own grammars.");
    all_ok
}
