//! The picture as data: nodes at the levels of policy attachment, the tree
//! edges between them, each policy at its target, and for a chosen rule the
//! field each supplier won. `dot.rs` and `mermaid.rs` only print it.

/// The levels, outermost first. A ListenerSet level slots in between
/// `Gateway` and `Listener` as one more variant (docs/graph.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    GatewayClass,
    Namespace,
    Gateway,
    /// A ListenerSet (or XListenerSet) between its Gateway and its listeners.
    ListenerSet,
    Listener,
    Route,
    Rule,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::GatewayClass => "GatewayClass",
            Level::Namespace => "Namespace",
            Level::Gateway => "Gateway",
            Level::ListenerSet => "ListenerSet",
            Level::Listener => "listener",
            Level::Route => "HTTPRoute",
            Level::Rule => "rule",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Level(Level),
    /// A policy, drawn at its target by an `Attach` edge.
    Policy,
}

#[derive(Debug, Clone)]
pub struct Node {
    /// `n0`, `n1`, ...: safe in DOT and Mermaid alike.
    pub id: String,
    pub kind: NodeKind,
    /// The first line is the kind or level, the others the name and, for a
    /// chosen rule, its own values.
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeKind {
    /// Parent to child in the attachment tree (a delegating rule to its child route too).
    Tree,
    /// A policy to its target; the label is its role (defaults, overrides, plain).
    Attach,
    /// A supplier to the chosen rule; the label lists the fields it won.
    Wins,
}

#[derive(Debug, Clone)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
    pub label: Vec<String>,
}

/// Nodes in insertion order, looked up by a key the builder chooses.
#[derive(Debug, Default)]
pub struct Graph {
    pub title: String,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    keys: Vec<String>,
}

impl Graph {
    pub fn new(title: String) -> Self {
        Graph {
            title,
            ..Graph::default()
        }
    }

    /// The node for `key`, created with `kind` and `lines` on first use.
    pub fn node(&mut self, key: &str, kind: NodeKind, lines: Vec<String>) -> String {
        if let Some(i) = self.keys.iter().position(|k| k == key) {
            return self.nodes[i].id.clone();
        }
        let id = format!("n{}", self.nodes.len());
        self.keys.push(key.to_string());
        self.nodes.push(Node {
            id: id.clone(),
            kind,
            lines,
        });
        id
    }

    pub fn find(&self, key: &str) -> Option<&str> {
        let i = self.keys.iter().position(|k| k == key)?;
        Some(self.nodes[i].id.as_str())
    }

    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.id == id)
    }

    /// Adds an edge once; the same tree edge reached twice (a route on two
    /// rules of one entry) is drawn once.
    pub fn edge(&mut self, from: &str, to: &str, kind: EdgeKind, label: Vec<String>) {
        let exists = self
            .edges
            .iter()
            .any(|e| e.from == from && e.to == to && e.kind == kind);
        if !exists {
            self.edges.push(Edge {
                from: from.into(),
                to: to.into(),
                kind,
                label,
            });
        }
    }
}
