//! The one table renderer of the tool: a header row and rows of cells, each column aligned left
//! (text) or right (figures), drawn for the terminal (space-padded to the display width of the
//! widest cell) or as a GitHub-flavoured Markdown table (pipes, an alignment row, escaped cells).
//!
//! Every table a person reads goes through here: the step table of a run, the verdict's checks,
//! `attack`, `baseline list`, the multi-run report, and the Markdown summary's checks and
//! generator health. Widths are display widths (the
//! `unicode-width` crate), not character counts, so `µs`, `×`, `≥` and CJK names line up.

use super::markdown::escape_cell;
use unicode_width::UnicodeWidthStr;

/// How a column's cells sit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Figures: padded on the left, so that their units line up.
    Right,
}

/// One cell: its plain text for the terminal and its Markdown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    plain: String,
    markdown: String,
}

impl Cell {
    /// Text, shown as it is: escaped in Markdown so that it cannot break the table or start markup
    /// (backtick-quoted names stay code spans, see [`escape_cell`]).
    pub fn text(text: impl Into<String>) -> Self {
        let plain = text.into();
        Self {
            markdown: escape_cell(&plain),
            plain,
        }
    }

    /// Text that Markdown shows in bold (`**no**`); the terminal shows it plain.
    pub fn strong(text: &str) -> Self {
        Self {
            plain: text.to_owned(),
            markdown: format!("**{}**", escape_cell(text)),
        }
    }

    /// An identifier that Markdown shows as code (`` `3f2a91c` ``); the terminal shows it plain.
    pub fn code(text: &str) -> Self {
        Self {
            plain: text.to_owned(),
            markdown: escape_cell(&format!("`{}`", text.replace('`', "'"))),
        }
    }

    /// This cell followed by `more`, e.g. a commit in code and `(dirty)` as text.
    pub fn then(mut self, more: Cell) -> Self {
        self.plain.push_str(&more.plain);
        self.markdown.push_str(&more.markdown);
        self
    }

    /// The terminal's text.
    pub fn plain(&self) -> &str {
        &self.plain
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<&String> for Cell {
    fn from(text: &String) -> Self {
        Self::text(text.as_str())
    }
}

/// A table: a header, an alignment per column, and rows.
#[derive(Clone, Debug, Default)]
pub struct Table {
    header: Vec<Cell>,
    align: Vec<Align>,
    rows: Vec<Vec<Cell>>,
    tight_rule: bool,
}

impl Table {
    /// A table with this header: the first column left-aligned (the row's name), the others
    /// right-aligned (figures); [`Table::left`] names text columns among them.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|h| Cell::text(*h)).collect(),
            align: (0..header.len())
                .map(|i| if i == 0 { Align::Left } else { Align::Right })
                .collect(),
            rows: Vec::new(),
            tight_rule: false,
        }
    }

    /// Writes the Markdown alignment row without spaces (`|---|---:|`), as the run's Markdown
    /// summary has always written it (its bytes are pinned by snapshots and quoted in the
    /// README); GitHub renders both forms alike.
    pub fn tight_rule(mut self) -> Self {
        self.tight_rule = true;
        self
    }

    /// Aligns the columns `columns` (counted from 0) to the left.
    pub fn left(mut self, columns: &[usize]) -> Self {
        for &i in columns {
            self.set_align(i, Align::Left);
        }
        self
    }

    /// Aligns column `column` (counted from 0) as `align` says.
    pub fn align(mut self, column: usize, align: Align) -> Self {
        self.set_align(column, align);
        self
    }

    fn set_align(&mut self, column: usize, align: Align) {
        if self.align.len() <= column {
            self.align.resize(column + 1, Align::Right);
        }
        self.align[column] = align;
    }

    /// Adds a row. A row may have fewer cells than the header (the rest are empty).
    pub fn row<C: Into<Cell>>(mut self, cells: impl IntoIterator<Item = C>) -> Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Adds rows.
    pub fn rows<R, C>(self, rows: impl IntoIterator<Item = R>) -> Self
    where
        R: IntoIterator<Item = C>,
        C: Into<Cell>,
    {
        rows.into_iter().fold(self, Self::row)
    }

    fn columns(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len(), self.align.len()])
            .max()
            .unwrap_or(0)
    }

    fn align_of(&self, column: usize) -> Align {
        self.align.get(column).copied().unwrap_or(Align::Right)
    }

    /// The table for the terminal: each column padded to the display width of its widest cell,
    /// two spaces between columns, no trailing spaces; a line per row after the header's.
    pub fn terminal(&self) -> String {
        let mut widths = vec![0; self.columns()];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(display_width(&cell.plain));
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[i] - display_width(&cell.plain));
                match self.align_of(i) {
                    Align::Left => {
                        line.push_str(&cell.plain);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(&cell.plain);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The table as GitHub-flavoured Markdown: `| a | b |` rows, an alignment row (`---` left,
    /// `---:` right) after the header, every text cell escaped.
    pub fn markdown(&self) -> String {
        let columns = self.columns();
        let line = |cells: Vec<&str>| format!("| {} |\n", cells.join(" | "));
        fn padded(row: &[Cell], columns: usize) -> Vec<&str> {
            (0..columns)
                .map(|i| row.get(i).map_or("", |c| c.markdown.as_str()))
                .collect()
        }
        let mut out = line(padded(&self.header, columns));
        let rule: Vec<&str> = (0..columns)
            .map(|i| match self.align_of(i) {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        if self.tight_rule {
            out.push_str(&format!("|{}|\n", rule.join("|")));
        } else {
            out.push_str(&line(rule));
        }
        for row in &self.rows {
            out.push_str(&line(padded(row, columns)));
        }
        out
    }
}

/// A terminal table with the usual alignment (the first column left, the others right): the
/// shorthand for [`Table::new`]`(header).rows(rows).terminal()`.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    Table::new(header).rows(rows).terminal()
}

/// The columns `text` takes on a terminal: East Asian wide characters take two, combining marks
/// none.
pub fn display_width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_numbers_right() {
        let out = table(
            &["operation", "p99 ms"],
            &[
                vec!["login".into(), "12.5".into()],
                vec!["accounts".into(), "3.0".into()],
            ],
        );
        insta::assert_snapshot!(out, @r"
        operation  p99 ms
        login        12.5
        accounts      3.0
        ");
    }

    #[test]
    fn left_columns_are_padded_on_the_right_and_lines_end_without_spaces() {
        let out = Table::new(&["run", "valid", "dropped"])
            .left(&[1])
            .row(["before", "yes", "0"])
            .row(["after", "no: soak", "12"])
            .terminal();
        assert_eq!(
            out,
            "run     valid     dropped\nbefore  yes             0\nafter   no: soak       12\n"
        );
        let last = Table::new(&["name", "note"])
            .left(&[1])
            .row(["a", "x"])
            .terminal();
        assert!(last.lines().all(|l| !l.ends_with(' ')), "{last:?}");
    }

    #[test]
    fn widths_are_display_widths_not_characters() {
        assert_eq!(display_width("µs"), 2);
        assert_eq!(display_width("≥ 1.50×"), 7);
        assert_eq!(display_width("登录"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        let out = Table::new(&["operation", "p99"])
            .row(["登录", "1 µs"])
            .row(["login", "≥ 2×"])
            .terminal();
        // Every row's figure ends in the same terminal column.
        let ends: Vec<usize> = out.lines().map(display_width).collect();
        assert_eq!(ends, [15, 15, 15], "{out}");
        assert_eq!(out.lines().nth(1), Some("登录       1 µs"), "{out}");
    }

    #[test]
    fn markdown_tables_have_an_alignment_row_and_escaped_cells() {
        let out = Table::new(&["run", "p99 | ms", "note"])
            .left(&[2])
            .row([
                Cell::text("a*b"),
                Cell::text("1.0"),
                Cell::text("line\nbreak"),
            ])
            .row([
                Cell::code("3f2a91c").then(Cell::text(" (dirty)")),
                Cell::strong("no"),
            ])
            .markdown();
        assert_eq!(
            out,
            "| run | p99 \\| ms | note |\n\
             | --- | ---: | --- |\n\
             | a\\*b | 1.0 | line<br>break |\n\
             | `3f2a91c` (dirty) | **no** |  |\n"
        );
    }

    #[test]
    fn a_tight_rule_has_no_spaces_and_changes_nothing_else() {
        let table = Table::new(&["phase", "valid"])
            .left(&[1])
            .row(["soak", "yes"]);
        assert_eq!(
            table.clone().tight_rule().markdown(),
            "| phase | valid |\n|---|---|\n| soak | yes |\n"
        );
        assert_eq!(
            table.markdown(),
            "| phase | valid |\n| --- | --- |\n| soak | yes |\n"
        );
    }

    #[test]
    fn cells_show_plain_text_on_the_terminal() {
        let out = Table::new(&["commit", "valid"])
            .left(&[1])
            .row([
                Cell::code("3f2a91c").then(" (dirty)".into()),
                Cell::strong("no"),
            ])
            .terminal();
        assert_eq!(out, "commit           valid\n3f2a91c (dirty)  no\n");
    }
}
