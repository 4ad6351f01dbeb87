//! A unified diff of two texts, line by line, for tests that compare output
//! with a committed file: a reviewer reads the lines that moved, not two
//! whole files. Hand-written (about a hundred lines) rather than a crate,
//! since the tests need only this one format.

/// Lines of context around each change, as `diff -u` gives.
const CONTEXT: usize = 3;

/// Above this many cells (changed lines of one side times the other's), the
/// changed middle is shown as removed whole and added whole instead of
/// aligned: still a correct diff, and a test never stalls on a huge change.
const MAX_CELLS: usize = 16_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op<'a> {
    Keep(&'a str),
    Remove(&'a str),
    Add(&'a str),
}

/// `diff -u`'s format: `---`/`+++` headers, then `@@ -a,b +c,d @@` hunks.
/// Empty when the texts are equal. A last line without a newline is marked
/// as diff marks it, so a difference in the final newline alone shows.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = align(&a, &b);
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    // Where each op starts in the old and the new text.
    let mut at = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0, 0);
    for op in &ops {
        at.push((i, j));
        match op {
            Op::Keep(_) => (i, j) = (i + 1, j + 1),
            Op::Remove(_) => i += 1,
            Op::Add(_) => j += 1,
        }
    }
    let changes: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Keep(_)))
        .collect();
    let mut c = 0;
    while c < changes.len() {
        let start = changes[c].saturating_sub(CONTEXT);
        let mut last = changes[c];
        // Two changes share a hunk when their contexts would touch.
        while c + 1 < changes.len() && changes[c + 1] <= last + 2 * CONTEXT + 1 {
            c += 1;
            last = changes[c];
        }
        c += 1;
        let end = (last + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let olen = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let nlen = hunk.iter().filter(|o| !matches!(o, Op::Remove(_))).count();
        let (o0, n0) = at[start];
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(o0, olen),
            range(n0, nlen)
        ));
        for op in hunk {
            let (mark, line) = match op {
                Op::Keep(l) => (' ', l),
                Op::Remove(l) => ('-', l),
                Op::Add(l) => ('+', l),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// `diff -u`'s range: an empty range names the line before it.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// A shortest edit script: the common prefix and suffix kept, the middle
/// aligned by a longest common subsequence.
fn align<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops: Vec<Op<'a>> = a[..prefix].iter().map(|l| Op::Keep(l)).collect();
    if am.len().saturating_mul(bm.len()) > MAX_CELLS {
        ops.extend(am.iter().map(|l| Op::Remove(l)));
        ops.extend(bm.iter().map(|l| Op::Add(l)));
    } else {
        ops.extend(lcs(am, bm));
    }
    ops.extend(a[a.len() - suffix..].iter().map(|l| Op::Keep(l)));
    ops
}

/// The textbook dynamic programme: `len[i][j]` is the longest common
/// subsequence of `a[i..]` and `b[j..]`; walking it forwards removes before
/// it adds, as diff prints.
fn lcs<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let w = b.len() + 1;
    let mut len = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            len[i * w + j] = if a[i] == b[j] {
                len[(i + 1) * w + j + 1] + 1
            } else {
                len[(i + 1) * w + j].max(len[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push(Op::Keep(a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && len[(i + 1) * w + j] >= len[i * w + j + 1]) {
            ops.push(Op::Remove(a[i]));
            i += 1;
        } else {
            ops.push(Op::Add(b[j]));
            j += 1;
        }
    }
    ops
}
