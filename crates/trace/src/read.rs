//! Plain reads of [`Store`]: the head, events by id, seq, page or kind,
//! and a tail to follow. None of them is verified: a decision reads the
//! [`crate::Verified`] view instead.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Error, Result};
use ulid::Ulid;

use crate::encoding::genesis_hash;
use crate::event::{CommitId, Event};
use crate::store::{EventFilter, Head, Store, conv_err, event_from_row, hash_col};

impl Store {
    /// The current chain head.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn head(&self) -> Result<Head> {
        read_head(&self.conn, &self.store_id)
    }

    /// The event with this id (ids are unique; were a forged duplicate ever
    /// stored, the one with the lowest seq, which index order yields first).
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or the row is malformed.
    pub fn event_by_id(&self, id: Ulid) -> Result<Option<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE id = ?1"
            ))
            .and_then(|mut st| {
                st.query_row([&id.0.to_be_bytes()[..]], event_from_row)
                    .optional()
            })
            .map_err(Error::sqlite("reading an event by id"))
    }

    /// The event at this seq.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or the row is malformed.
    pub fn event_by_seq(&self, seq: u64) -> Result<Option<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq = ?1"
            ))
            .and_then(|mut st| st.query_row([seq as i64], event_from_row).optional())
            .map_err(Error::sqlite("reading an event by seq"))
    }

    /// Up to `limit` events with seq greater than `after`, in seq order.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![after as i64, limit.min(i64::MAX as usize) as i64],
                    event_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading events"))
    }

    /// The newest `limit` events matching `filter`, in seq order: what
    /// `ratchet log --last N` shows.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn last_events_matching(&self, limit: usize, filter: &EventFilter) -> Result<Vec<Event>> {
        let mut events: Vec<Event> = self
            .conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE (?2 IS NULL OR kind = ?2)
                   AND (?3 IS NULL OR commit_id = ?3)
                   AND (?4 IS NULL OR seq IN (SELECT seq FROM scores NOT INDEXED WHERE scorer = ?4))
                 ORDER BY seq DESC LIMIT ?1"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![
                        limit.min(i64::MAX as usize) as i64,
                        filter.kind,
                        filter.commit.as_ref().map(CommitId::as_str),
                        filter.scorer
                    ],
                    event_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading events"))?;
        events.reverse();
        Ok(events)
    }

    /// Every event kind in the store with its count, by name: what a
    /// filter naming a kind is checked against.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails.
    pub fn event_kinds(&self) -> Result<Vec<(String, u64)>> {
        self.conn
            .prepare_cached("SELECT kind, COUNT(*) FROM events GROUP BY kind ORDER BY kind")
            .and_then(|mut st| {
                st.query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64))
                })?
                .collect()
            })
            .map_err(Error::sqlite("reading event kinds"))
    }

    /// Up to `limit` events with seq greater than `after` that match
    /// `filter` (every condition given must hold), in seq order: what
    /// `ratchet log --kind/--commit/--scorer` shows.
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_matching(
        &self,
        after: u64,
        limit: usize,
        filter: &EventFilter,
    ) -> Result<Vec<Event>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events WHERE seq > ?1
                   AND (?3 IS NULL OR kind = ?3)
                   AND (?4 IS NULL OR commit_id = ?4)
                   AND (?5 IS NULL OR seq IN (SELECT seq FROM scores NOT INDEXED WHERE scorer = ?5))
                 ORDER BY seq LIMIT ?2"
            ))
            .and_then(|mut st| {
                st.query_map(
                    params![
                        after as i64,
                        limit.min(i64::MAX as usize) as i64,
                        filter.kind,
                        filter.commit.as_ref().map(CommitId::as_str),
                        filter.scorer
                    ],
                    event_from_row,
                )?
                .collect()
            })
            .map_err(Error::sqlite("reading events"))
    }

    /// Every event of the given kinds, in seq order (a plain scan of the
    /// events table, not verified): for listings and for a writer checking
    /// what it is about to append. A decision reads
    /// [`crate::Verified::events_of_kinds`].
    ///
    /// # Errors
    /// [`Error::Sqlite`] if the read fails or a row is malformed.
    pub fn events_of_kinds(&self, kinds: &[&str]) -> Result<Vec<Event>> {
        let list =
            serde_json::to_string(kinds).map_err(|e| Error::invalid("kinds", e.to_string()))?;
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                event_columns!(),
                " FROM events NOT INDEXED WHERE seq >= 1 AND kind IN (SELECT value FROM json_each(?1)) ORDER BY seq"
            ))
            .and_then(|mut st| st.query_map([list], event_from_row)?.collect())
            .map_err(Error::sqlite("reading events by kind"))
    }

    /// Follows the chain from `after` (exclusive): an iterator that reads pages
    /// of events and, once exhausted, can be resumed with [`Tail::position`].
    pub fn tail(&self, after: u64) -> Tail<'_> {
        Tail {
            store: self,
            position: after,
            page: Vec::new().into_iter(),
            done: false,
        }
    }
}

/// A REAL column's value (SQLite may hand back an integral REAL as INTEGER).
pub(crate) fn real(row: &Row<'_>, i: usize) -> rusqlite::Result<f64> {
    match row.get_ref(i)? {
        ValueRef::Real(v) => Ok(v),
        ValueRef::Integer(v) => Ok(v as f64),
        _ => Err(conv_err(i, "value")),
    }
}

pub(crate) fn read_head(conn: &Connection, store_id: &str) -> Result<Head> {
    let row: Option<(i64, blake3::Hash)> = conn
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut st| {
            st.query_row([], |r| Ok((r.get(0)?, hash_col(r, 1)?)))
                .optional()
        })
        .map_err(Error::sqlite("reading the chain head"))?;
    Ok(match row {
        Some((seq, hash)) => Head {
            size: seq as u64,
            hash,
        },
        None => Head {
            size: 0,
            hash: genesis_hash(store_id),
        },
    })
}

/// Iterator returned by [`Store::tail`].
#[derive(Debug)]
pub struct Tail<'s> {
    store: &'s Store,
    position: u64,
    page: std::vec::IntoIter<Event>,
    done: bool,
}

impl Tail<'_> {
    const PAGE: usize = 1024;

    /// The seq of the last event yielded (or the starting point).
    pub fn position(&self) -> u64 {
        self.position
    }
}

impl Iterator for Tail<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.page.next() {
            self.position = e.seq;
            return Some(Ok(e));
        }
        if self.done {
            return None;
        }
        match self.store.events_after(self.position, Self::PAGE) {
            Ok(page) => {
                if page.len() < Self::PAGE {
                    self.done = true;
                }
                self.page = page.into_iter();
                let event = self.page.next()?;
                self.position = event.seq;
                Some(Ok(event))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
