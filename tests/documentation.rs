//! The book and the README hold together: every page is in the book's
//! table of contents, and every relative link leads to a file that exists
//! and, where it names one, to a heading of that file (mdBook's anchors).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn book_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repository().join("book/src"))
        .expect("the book exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages
}

/// The text of a document outside fenced code blocks, line by line.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The targets of the Markdown links `[text](target)` of a document,
/// leaving out inline code spans.
fn links(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        let mut outside_code = String::new();
        for (index, part) in line.split('`').enumerate() {
            if index % 2 == 0 {
                outside_code.push_str(part);
            }
        }
        let mut rest = outside_code.as_str();
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            targets.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    targets
}

/// The anchors mdBook gives a page's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| {
            heading
                .trim_start_matches('#')
                .trim()
                .chars()
                .filter_map(|c| match c {
                    c if c.is_whitespace() => Some('-'),
                    c if c.is_alphanumeric() || c == '_' || c == '-' => {
                        Some(c.to_ascii_lowercase())
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_book_page_is_in_the_table_of_contents() {
    let summary = std::fs::read_to_string(repository().join("book/src/SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    let pages: BTreeSet<String> = book_pages()
        .iter()
        .map(|page| page.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "SUMMARY.md")
        .collect();
    assert!(pages.len() >= 15, "only {} pages", pages.len());
    let missing: Vec<_> = pages.difference(&listed).collect();
    let dangling: Vec<_> = listed.difference(&pages).collect();
    assert!(missing.is_empty(), "pages not in SUMMARY.md: {missing:?}");
    assert!(
        dangling.is_empty(),
        "SUMMARY.md lists missing pages: {dangling:?}"
    );
}

#[test]
fn relative_links_of_the_book_and_readme_resolve() {
    let mut documents = book_pages();
    documents.push(repository().join("README.md"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for document in &documents {
        let text = std::fs::read_to_string(document).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                document.clone()
            } else {
                document.parent().unwrap().join(path)
            };
            checked += 1;
            let Ok(linked) = std::fs::read_to_string(&file) else {
                if !file.exists() {
                    broken.push(format!("{}: {target}: no such file", document.display()));
                }
                continue;
            };
            if let Some(anchor) = anchor
                && !anchors(&linked).contains(anchor)
            {
                broken.push(format!("{}: {target}: no such heading", document.display()));
            }
        }
    }
    assert!(checked >= 40, "only {checked} links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn anchors_follow_mdbook() {
    let page = "# Title\n## `xg check FILE…`\n```sh\n# not a heading\n```\n### Compiling per request: the compile cache\n";
    let expected: BTreeSet<String> = [
        "title",
        "xg-check-file",
        "compiling-per-request-the-compile-cache",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(anchors(page), expected);
}
