//! A session's bounded queue of outgoing frames, in which text waiting for a slow reader
//! coalesces.
//!
//! A text or thought delta offered while the queue's last item is an unsent chunk of the same
//! kind is appended to it, so a client that reads slower than the model writes receives fewer,
//! larger chunks instead of making corvid hold one frame per delta. Only the last item ever
//! grows, so nothing is reordered, and anything else (a tool card, a turn's end) sits between
//! chunks and stops the merging. Non-chunk items are never merged or dropped: when the queue
//! is full, [`Coalescer::offer`] hands the item back and the caller stops reading until there
//! is room.

use std::collections::VecDeque;

/// Which stream a chunk belongs to; chunks of different kinds never merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKind {
    Text,
    Thought,
}

/// One queued item: a chunk of streamed text, or any other frame or action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<T> {
    Chunk { kind: ChunkKind, text: String },
    Other(T),
}

/// A FIFO of at most `capacity` items.
#[derive(Debug)]
pub struct Coalescer<T> {
    items: VecDeque<Item<T>>,
    capacity: usize,
}

impl<T> Coalescer<T> {
    /// An empty queue holding at most `capacity` items (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            items: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Queues `item`, merging a chunk into a queued chunk of its kind at the tail. A full queue
    /// hands back an item it could not merge; the caller keeps it and offers it again after
    /// [`Self::pop`].
    pub fn offer(&mut self, item: Item<T>) -> Result<(), Item<T>> {
        if let (
            Item::Chunk { kind, text },
            Some(Item::Chunk {
                kind: tail_kind,
                text: tail,
            }),
        ) = (&item, self.items.back_mut())
            && kind == tail_kind
        {
            tail.push_str(text);
            return Ok(());
        }
        if self.items.len() >= self.capacity {
            return Err(item);
        }
        self.items.push_back(item);
        Ok(())
    }

    /// The oldest item, to send now.
    pub fn pop(&mut self) -> Option<Item<T>> {
        self.items.pop_front()
    }

    /// Puts back an item [`Self::pop`] returned that could not be sent yet, at the front.
    pub fn unpop(&mut self, item: Item<T>) {
        self.items.push_front(item);
    }

    /// Items queued.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const CAPACITY: usize = 4;

    /// What the model does, or the reader taking some items.
    #[derive(Debug, Clone)]
    enum Step {
        Delta(ChunkKind, String),
        Card(u32),
        TurnEnd,
        Read(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => ("[a-z ]{0,3}", any::<bool>()).prop_map(|(text, thought)| Step::Delta(
                if thought { ChunkKind::Thought } else { ChunkKind::Text },
                text
            )),
            2 => any::<u32>().prop_map(Step::Card),
            1 => Just(Step::TurnEnd),
            3 => (0usize..3).prop_map(Step::Read),
        ]
    }

    /// The stream a client sees, with adjacent chunks of one kind joined: what coalescing must
    /// leave unchanged.
    fn normalized(items: impl IntoIterator<Item = Item<Option<u32>>>) -> Vec<Item<Option<u32>>> {
        let mut out: Vec<Item<Option<u32>>> = Vec::new();
        for item in items {
            match (item, out.last_mut()) {
                (Item::Chunk { text, .. }, _) if text.is_empty() => {}
                (
                    Item::Chunk { kind, text },
                    Some(Item::Chunk {
                        kind: last_kind,
                        text: last,
                    }),
                ) if kind == *last_kind => last.push_str(&text),
                (item, _) => out.push(item),
            }
        }
        out
    }

    proptest! {
        /// Under any interleaving of deltas, cards, turn ends and a reader that takes 0-2
        /// items at a time (a slow reader), the client sees the same text in the same
        /// places, every card once and in order, and the queue never exceeds its capacity.
        #[test]
        fn coalescing_keeps_the_text_and_the_order_of_everything_else(
            steps in proptest::collection::vec(step(), 0..200)
        ) {
            let mut queue = Coalescer::new(CAPACITY);
            // The item a full queue handed back; the producer reads nothing more meanwhile.
            let mut held: VecDeque<Item<Option<u32>>> = VecDeque::new();
            let mut produced = Vec::new();
            let mut received = Vec::new();
            let mut pending_input: VecDeque<Item<Option<u32>>> = VecDeque::new();
            for step in steps {
                match step {
                    Step::Delta(kind, text) => pending_input.push_back(Item::Chunk { kind, text }),
                    Step::Card(id) => pending_input.push_back(Item::Other(Some(id))),
                    Step::TurnEnd => pending_input.push_back(Item::Other(None)),
                    Step::Read(n) => {
                        for _ in 0..n {
                            if let Some(item) = queue.pop() {
                                received.push(item);
                            }
                        }
                    }
                }
                // The producer offers while nothing is held back.
                while let Some(item) = held.pop_front().or_else(|| pending_input.pop_front()) {
                    match queue.offer(item.clone()) {
                        Ok(()) => produced.push(item),
                        Err(back) => {
                            held.push_front(back);
                            break;
                        }
                    }
                    prop_assert!(queue.len() <= CAPACITY);
                }
            }
            // The reader catches up.
            loop {
                while let Some(item) = held.pop_front() {
                    if let Err(back) = queue.offer(item.clone()) {
                        held.push_front(back);
                        break;
                    }
                    produced.push(item);
                }
                match queue.pop() {
                    Some(item) => received.push(item),
                    None if held.is_empty() => break,
                    None => {}
                }
            }
            prop_assert_eq!(normalized(received), normalized(produced));
        }
    }

    #[test]
    fn a_slow_reader_gets_one_chunk_per_run_of_deltas_and_every_card() {
        let mut queue = Coalescer::new(8);
        for i in 0..1000 {
            queue
                .offer(Item::Chunk {
                    kind: ChunkKind::Text,
                    text: format!("{i} "),
                })
                .unwrap();
            if i % 250 == 249 {
                queue.offer(Item::Other(i)).unwrap();
            }
            assert!(queue.len() <= 8);
        }
        let mut out = Vec::new();
        while let Some(item) = queue.pop() {
            out.push(item);
        }
        // Four runs of text, each followed by its card: the queue is at capacity, never past it.
        assert_eq!(out.len(), 8);
        let text: String = out
            .iter()
            .filter_map(|item| match item {
                Item::Chunk { text, .. } => Some(text.as_str()),
                Item::Other(_) => None,
            })
            .collect();
        assert_eq!(text, (0..1000).map(|i| format!("{i} ")).collect::<String>());
    }

    #[test]
    fn a_full_queue_hands_back_a_card_but_still_merges_text_into_its_tail_chunk() {
        let mut queue = Coalescer::new(2);
        queue.offer(Item::Other(1)).unwrap();
        queue
            .offer(Item::Chunk {
                kind: ChunkKind::Thought,
                text: "a".into(),
            })
            .unwrap();
        assert_eq!(queue.offer(Item::Other(2)), Err(Item::Other(2)));
        queue
            .offer(Item::Chunk {
                kind: ChunkKind::Thought,
                text: "b".into(),
            })
            .unwrap();
        let text = Item::Chunk {
            kind: ChunkKind::Text,
            text: "c".into(),
        };
        assert_eq!(queue.offer(text.clone()), Err(text));
        assert_eq!(queue.pop(), Some(Item::Other(1)));
        assert_eq!(
            queue.pop(),
            Some(Item::Chunk {
                kind: ChunkKind::Thought,
                text: "ab".into()
            })
        );
    }
}
