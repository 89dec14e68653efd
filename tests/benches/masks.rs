//! Token-mask speed on real vocabularies: per-step mask time (mean, p50,
//! p99, max), time to first mask with an empty and with a warm cache, and
//! the counters that explain them (cache hits, entries built, uncertain
//! tokens checked, bytes pushed).
//!
//! `cargo bench -p xg-tests --bench masks` walks JSON documents token by
//! token through `std/json.xg`: the valid instances of the MaskBench files
//! in `$XG_MASKBENCH` (default `../shared/maskbench`, if present; compact
//! JSON), or generated documents. Each step fills the mask, then accepts
//! the document's next token. Then draft-tree masks, and masks under a
//! token budget that binds against the same walk without one.

#![allow(
    clippy::cast_precision_loss,
    reason = "times and counts of a benchmark are far below 2^52"
)]

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use xg_runtime::{DraftTree, Grammar, Matcher, TokenId, Vocabulary};

/// The most MaskBench files read.
const FILES: usize = 120;

/// The documents, each with its MaskBench schema (none for generated ones).
fn documents() -> Vec<(Option<serde_json::Value>, String)> {
    let dir = std::env::var_os("XG_MASKBENCH").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/maskbench"),
        PathBuf::from,
    );
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    paths.sort();
    let mut documents = Vec::new();
    for path in paths.iter().take(FILES) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Ok(file) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        for test in file["tests"].as_array().into_iter().flatten() {
            if test["valid"] == true {
                let text = serde_json::to_string(&test["data"]).expect("JSON value");
                documents.push((Some(file["schema"].clone()), text));
            }
        }
    }
    if documents.is_empty() {
        eprintln!(
            "no MaskBench files in {}: generated documents",
            dir.display()
        );
        for k in 0..40 {
            documents.push((None, format!(
                "{{\"id\":{k},\"name\":\"item {k} — ünïcode\",\"tags\":[\"a\",\"b{k}\"],\"price\":{}.5,\"owner\":{{\"first\":\"Ada\",\"active\":true,\"note\":null}}}}",
                k * 7
            )));
        }
    } else {
        eprintln!("{} valid instances from {}", documents.len(), dir.display());
    }
    documents
}

/// The value below which `per_mille`/1000 of `sorted` lie.
fn percentile(sorted: &[f64], per_mille: usize) -> f64 {
    sorted[(sorted.len() - 1) * per_mille / 1000]
}

fn report(label: &str, times: &mut [f64]) {
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "{label:<34} n={:<7} mean {:>8.1} µs  p50 {:>8.1}  p99 {:>8.1}  max {:>9.1}",
        times.len(),
        mean,
        percentile(times, 500),
        percentile(times, 990),
        times[times.len() - 1]
    );
}

fn run(name: &str, vocabulary: &Arc<Vocabulary>, grammar: &Arc<Grammar>, tokens: &[Vec<u32>]) {
    let mut steps = Vec::new();
    let mut first_masks = Vec::new();
    let mut uncertain = 0u64;
    let mut pushed = 0u64;
    let mut mask = vec![0; vocabulary.mask_words()];
    let started = Instant::now();
    let cold = {
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        let t = Instant::now();
        matcher.fill_next_token_bitmask(&mut mask).expect("mask");
        t.elapsed().as_secs_f64() * 1e6
    };
    for ids in tokens {
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        for (k, &id) in ids.iter().enumerate() {
            let t = Instant::now();
            matcher.fill_next_token_bitmask(&mut mask).expect("mask");
            let micros = t.elapsed().as_secs_f64() * 1e6;
            if k == 0 {
                first_masks.push(micros);
            }
            steps.push(micros);
            let stats = matcher.last_mask_stats();
            uncertain += u64::from(stats.uncertain);
            pushed += stats.bytes_pushed;
            let id = TokenId::new(id as usize).expect("token id");
            assert!(
                mask[id.as_usize() / 32] & (1 << (id.as_usize() % 32)) != 0,
                "the mask refused the document's token {id}"
            );
            matcher.accept_token(id).expect("the document's token");
        }
        assert!(matcher.can_terminate());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cache = vocabulary.mask_cache().stats();
    println!(
        "{name}: {} documents, {} tokens in {elapsed:.1} s; first mask with an empty cache {cold:.0} µs",
        tokens.len(),
        steps.len()
    );
    report("  mask per step", &mut steps);
    report("  first mask (warm cache)", &mut first_masks);
    println!(
        "  per step: {:.1} uncertain tokens checked, {:.1} bytes pushed\n  cache: {} row hits, {} rows from cached entries, {} entries built; holds {} entries, {} rows, {:.1} MiB",
        uncertain as f64 / steps.len() as f64,
        pushed as f64 / steps.len() as f64,
        cache.hits,
        cache.partial_hits,
        cache.misses,
        cache.entries,
        cache.combinations,
        cache.bytes as f64 / f64::from(1 << 20)
    );
}

/// The documents again under a token budget that binds: for each, the
/// least budget that still lets it through (the most, over its tokens, of
/// the steps taken plus the fewest bytes to an end after them), so that
/// its masks are restricted all along; and with 64 tokens to spare, where
/// only the masks near its end may be. Masks with those budgets against
/// the same walk without one, alternated step by step.
fn budgets(label: &str, vocabulary: &Arc<Vocabulary>, walks: &[(Arc<Grammar>, &[u32])]) {
    let (mut with, mut spare, mut without) = (Vec::new(), Vec::new(), Vec::new());
    let mut mask = vec![0; vocabulary.mask_words()];
    let id = |id: u32| TokenId::new(id as usize).expect("token id");
    for (grammar, ids) in walks {
        let start = || Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        let mut dry = start();
        let mut budget = 0;
        for (k, &token) in ids.iter().enumerate() {
            dry.accept_token(id(token)).expect("the document's token");
            budget = budget.max(k + 1 + dry.min_bytes_to_finish().expect("an end"));
        }
        let (mut free, mut bounded) = (start(), start().with_token_budget(budget));
        let mut roomy = start().with_token_budget(budget + 64);
        for &token in *ids {
            let t = Instant::now();
            roomy.fill_next_token_bitmask(&mut mask).expect("mask");
            spare.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            free.fill_next_token_bitmask(&mut mask).expect("mask");
            without.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            bounded.fill_next_token_bitmask(&mut mask).expect("mask");
            with.push(t.elapsed().as_secs_f64() * 1e6);
            let token = id(token);
            assert!(
                mask[token.as_usize() / 32] & (1 << (token.as_usize() % 32)) != 0,
                "the budgeted mask refused the document's token {token}"
            );
            free.accept_token(token).expect("the document's token");
            bounded.accept_token(token).expect("the document's token");
            roomy.accept_token(token).expect("the document's token");
        }
    }
    println!("  {label}: {} documents", walks.len());
    report("    mask per step, no budget", &mut without);
    report("    mask per step, a budget that binds", &mut with);
    report("    mask per step, 64 tokens to spare", &mut spare);
}

/// The documents again as matches of rules with limits that bind: a JSON
/// value of `std/json.xg` limited to the document's tokens (it binds at
/// the last steps) or bytes, and the document as the free text of a
/// `<think>` block limited to its tokens (with the end). Masks against the
/// same walk under the grammar without limits, alternated step by step.
fn limits(vocabulary: &Arc<Vocabulary>, encoder: &tokenizers::Tokenizer, texts: &[&str]) {
    // (what, the attribute, the grammar with `{attribute}` where it goes)
    let shapes = [
        (
            "a JSON value",
            "max_tokens",
            "root ::= value\nvalue{attribute} ::= json.value",
        ),
        (
            "a JSON value",
            "max_bytes",
            "root ::= value\nvalue{attribute} ::= json.value",
        ),
        (
            "free text",
            "max_tokens",
            "root ::= \"<think>\" thought\nthought{attribute} ::= [^<]* \"</think>\"",
        ),
    ];
    let mut mask = vec![0; vocabulary.mask_words()];
    for (what, attribute, shape) in shapes {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let free_text = what == "free text";
        for &text in texts {
            let text = if free_text {
                format!("<think>{text}</think>")
            } else {
                text.to_owned()
            };
            let ids = encoder.encode(text.as_str(), false).expect("encoding");
            let ids = ids.get_ids();
            let grammar = |attributes: &str| {
                common::runtime_grammar(&format!(
                    "import \"std/json.xg\" as json;\n{}\n",
                    shape.replace("{attribute}", attributes)
                ))
            };
            let free = grammar("");
            // The least limit the document fits in: in bytes, its length;
            // in tokens, the most over its steps of the tokens the limited
            // match spans (all but those of `<think>` alone) and the bytes
            // that end it after them.
            let count = if attribute == "max_bytes" {
                text.len()
            } else {
                let skipped = if free_text { "<think>".len() } else { 0 };
                let mut dry = Matcher::new(Arc::clone(&free));
                let (mut end, mut spanned, mut least) = (0, 0, 0);
                for &id in ids {
                    let id = TokenId::new(id as usize).expect("token id");
                    dry.accept_bytes(vocabulary.bytes(id))
                        .expect("the document's token");
                    end += vocabulary.bytes(id).len();
                    if end > skipped {
                        spanned += 1;
                        least = least.max(spanned + dry.min_bytes_to_finish().expect("an end"));
                    }
                }
                least
            };
            let limited = grammar(&format!(" [{attribute}={count}]"));
            let mut limited = Matcher::with_vocabulary(limited, Arc::clone(vocabulary));
            let mut free = Matcher::with_vocabulary(free, Arc::clone(vocabulary));
            for &token in ids {
                let t = Instant::now();
                free.fill_next_token_bitmask(&mut mask).expect("mask");
                without.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                limited.fill_next_token_bitmask(&mut mask).expect("mask");
                with.push(t.elapsed().as_secs_f64() * 1e6);
                let token = TokenId::new(token as usize).expect("token id");
                assert!(
                    mask[token.as_usize() / 32] & (1 << (token.as_usize() % 32)) != 0,
                    "the limited mask refused the document's token {token}"
                );
                free.accept_token(token).expect("the document's token");
                limited.accept_token(token).expect("the document's token");
            }
        }
        println!("  {what} with {attribute}: {} documents", texts.len());
        report("    mask per step, no limit", &mut without);
        report("    mask per step, a limit that binds", &mut with);
    }
}

/// Draft trees along the documents: tree masks in one call against one
/// replayed mask per node (see the module docs).
fn draft_trees(vocabulary: &Arc<Vocabulary>, grammar: &Arc<Grammar>, tokens: &[Vec<u32>]) {
    const DEPTH: usize = 8;
    let words = vocabulary.mask_words();
    let refused = TokenId::new(vocabulary.len() - 1).expect("a token id");
    let (mut tree_secs, mut replay_secs, mut trees) = (0.0, 0.0, 0);
    for ids in tokens {
        let ids: Vec<TokenId> = ids
            .iter()
            .map(|&id| TokenId::new(id as usize).expect("token id"))
            .collect();
        let mut matcher = Matcher::with_vocabulary(Arc::clone(grammar), Arc::clone(vocabulary));
        for (k, &id) in ids.iter().enumerate() {
            if k % DEPTH == 0 && k + DEPTH < ids.len() {
                // Node 2i+1: the next document token below node 2i-1 (or
                // the root); node 2i+2: a refused sibling of it.
                let mut tokens = vec![id];
                let (mut first_child, mut next_sibling) = (vec![1i64], vec![-1i64]);
                for level in 0..DEPTH {
                    let node = i64::try_from(tokens.len()).expect("small");
                    tokens.extend([ids[k + level], refused]);
                    first_child.extend([if level + 1 < DEPTH { node + 2 } else { -1 }, -1]);
                    next_sibling.extend([node + 1, -1]);
                }
                let tree = DraftTree {
                    tokens: &tokens,
                    first_child: &first_child,
                    next_sibling: &next_sibling,
                };
                let mut masks = vec![0; tokens.len() * words];
                let t = Instant::now();
                matcher
                    .fill_draft_tree_bitmasks(tree, &mut masks)
                    .expect("tree masks");
                tree_secs += t.elapsed().as_secs_f64();
                let t = Instant::now();
                for node in 0..tokens.len() {
                    let mut fork = matcher.fork();
                    let depth = node.div_ceil(2);
                    let path = &ids[k..k + depth];
                    let refused_leaf = node > 0 && node % 2 == 0;
                    let taken = path.iter().all(|&t| fork.accept_token(t).is_ok());
                    if taken && !refused_leaf {
                        fork.fill_next_token_bitmask(&mut masks[node * words..][..words])
                            .expect("mask");
                    }
                }
                replay_secs += t.elapsed().as_secs_f64();
                trees += 1;
            }
            matcher.accept_token(id).expect("the document's token");
        }
    }
    println!(
        "  draft trees ({} nodes, {trees} trees): {:.0} µs per tree in one call, {:.0} µs replaying each node's path ({:.1}x)",
        2 * DEPTH + 1,
        tree_secs / f64::from(trees) * 1e6,
        replay_secs / f64::from(trees) * 1e6,
        replay_secs / tree_secs
    );
}

fn main() {
    let documents = documents();
    let grammar = common::runtime_grammar(xg_compiler::std_text("std/json.xg").expect("std json"));
    let options = xg_compiler::json_schema::Options {
        whitespace: xg_compiler::json_schema::Whitespace::Compact,
        property_order: xg_compiler::json_schema::PropertyOrder::Given,
        ..Default::default()
    };
    let cache = xg_compiler::CompileCache::default();
    // Each document's schema, where it compiles and takes the document.
    let schemas: Vec<Option<Arc<Grammar>>> = documents
        .iter()
        .map(|(schema, text)| {
            let grammar = common::schema_grammar(schema.as_ref()?, &options, &cache).ok()?;
            Matcher::new(Arc::clone(&grammar))
                .accept_str(text)
                .is_ok()
                .then_some(grammar)
        })
        .collect();
    for tokenizer in &common::REAL_TOKENIZERS[..3] {
        let (json, config) = common::real_tokenizer(tokenizer);
        let vocabulary = Arc::new(
            Vocabulary::from_tokenizer_json(&json, Some(&config)).expect("real vocabulary"),
        );
        let encoder = tokenizers::Tokenizer::from_bytes(&json).expect("tokenizer");
        let tokens: Vec<Vec<u32>> = documents
            .iter()
            .map(|(_, text)| {
                encoder
                    .encode(text.as_str(), false)
                    .expect("encoding")
                    .get_ids()
                    .to_vec()
            })
            .collect();
        run(tokenizer.name, &vocabulary, &grammar, &tokens);
        draft_trees(&vocabulary, &grammar, &tokens);
        let free: Vec<(Arc<Grammar>, &[u32])> = (tokens.iter())
            .map(|ids| (Arc::clone(&grammar), ids.as_slice()))
            .collect();
        budgets("std/json.xg", &vocabulary, &free);
        let typed: Vec<(Arc<Grammar>, &[u32])> = (schemas.iter().zip(&tokens))
            .filter_map(|(schema, ids)| Some((Arc::clone(schema.as_ref()?), ids.as_slice())))
            .collect();
        budgets("each document's schema", &vocabulary, &typed);
        let texts: Vec<&str> = documents.iter().map(|(_, text)| text.as_str()).collect();
        limits(&vocabulary, &encoder, &texts);
    }
}
