//! The input model: the Kubernetes objects the resolver reads, validated.
//! Raw serde shapes live next to each kind; `crate::parse` turns
//! [`crate::source::SourceDoc`]s into these.

pub mod gateway;
pub mod inputs;
pub mod kinds;
pub mod levels;
pub mod listener_set;
pub mod meta;
pub mod peers;
pub mod policy;
pub mod route;
pub mod strategy;

pub use gateway::{
    AllowedRoutes, Gateway, GatewayClass, LabelSelector, Listener, Namespace, NamespaceFrom,
};
pub use inputs::Inputs;
pub use listener_set::{ListenerSet, SetKind, SetRef, SetState};
pub use meta::{Meta, Priority};
pub use policy::{Policy, PolicyKind, Target, TargetRef};
pub use route::{HttpRoute, ParentRef, Rule};
pub use strategy::MergeStrategy;
