//! The dependency graph: topological order, parallel waves, the longest
//! deadline chain, and the index checks every edit relies on.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap},
    time::Duration,
};

use super::{Plan, PlanError, SubTask};

/// Dependency graph over positions `0..n` (equal to indexes once checked).
pub(super) struct Graph {
    pub(super) deps: Vec<Vec<usize>>,
    pub(super) dependents: Vec<Vec<usize>>,
}

impl Plan {
    /// Indexes in an order that respects dependencies (Kahn's algorithm);
    /// among sub-tasks ready at the same time the lowest index goes first, so
    /// the order is deterministic.
    pub fn topological_order(&self) -> Result<Vec<u32>, PlanError> {
        let graph = self.graph()?;
        Ok(kahn(&graph)?.into_iter().map(to_index).collect())
    }

    /// Groups of indexes that can run in parallel: wave `k` holds the
    /// sub-tasks whose longest dependency chain has `k` links. Each wave is
    /// sorted by index.
    pub fn waves(&self) -> Result<Vec<Vec<u32>>, PlanError> {
        let graph = self.graph()?;
        let order = kahn(&graph)?;
        let mut level = vec![0usize; order.len()];
        let mut waves: Vec<Vec<u32>> = Vec::new();
        for &node in &order {
            level[node] = graph.deps[node].iter().map(|&d| level[d] + 1).max().unwrap_or(0);
            if waves.len() <= level[node] {
                waves.resize_with(level[node] + 1, Vec::new);
            }
            waves[level[node]].push(to_index(node));
        }
        for wave in &mut waves {
            wave.sort_unstable();
        }
        Ok(waves)
    }

    /// Longest chain of deadline offsets through the dependency graph: how
    /// long the plan may take if every sub-task uses its full deadline.
    pub fn estimated_duration(&self) -> Result<Duration, PlanError> {
        let graph = self.graph()?;
        let order = kahn(&graph)?;
        let sorted = self.sorted()?;
        let mut finish = vec![0u64; order.len()];
        for &node in &order {
            let start = graph.deps[node].iter().map(|&d| finish[d]).max().unwrap_or(0);
            finish[node] = start.saturating_add(sorted[node].deadline_offset_secs);
        }
        Ok(Duration::from_secs(finish.into_iter().max().unwrap_or(0)))
    }

    /// Sub-tasks sorted by index, after checking indexes are exactly `0..n`.
    pub(super) fn sorted(&self) -> Result<Vec<&SubTask>, PlanError> {
        if self.subtasks.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut sorted: Vec<&SubTask> = self.subtasks.iter().collect();
        sorted.sort_by_key(|s| s.index);
        for pair in sorted.windows(2) {
            if pair[0].index == pair[1].index {
                return Err(PlanError::DuplicateIndex(pair[0].index));
            }
        }
        for (expected, task) in sorted.iter().enumerate() {
            let expected = to_index(expected);
            if task.index != expected {
                return Err(PlanError::NonContiguousIndexes { expected, found: task.index });
            }
        }
        Ok(sorted)
    }

    pub(super) fn graph(&self) -> Result<Graph, PlanError> {
        let sorted = self.sorted()?;
        let n = sorted.len();
        let mut deps = vec![Vec::new(); n];
        let mut dependents = vec![Vec::new(); n];
        for (node, task) in sorted.iter().enumerate() {
            for &dep in &task.depends_on {
                if dep == task.index {
                    return Err(PlanError::SelfDependency(task.index));
                }
                if dep as usize >= n {
                    return Err(PlanError::MissingDependency { index: task.index, missing: dep });
                }
                deps[node].push(dep as usize);
                dependents[dep as usize].push(node);
            }
        }
        for list in deps.iter_mut().chain(dependents.iter_mut()) {
            list.sort_unstable();
            list.dedup();
        }
        Ok(Graph { deps, dependents })
    }
}

/// Positions come from plans capped well below `u32::MAX` sub-tasks.
pub(super) fn to_index(position: usize) -> u32 {
    u32::try_from(position).unwrap_or(u32::MAX)
}

/// Kahn's algorithm with a min-heap so ties go to the lowest index; on a
/// cycle, reports one cycle found among the nodes left over.
fn kahn(graph: &Graph) -> Result<Vec<usize>, PlanError> {
    let n = graph.deps.len();
    let mut pending: Vec<usize> = graph.deps.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&v| pending[v] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(node)) = ready.pop() {
        order.push(node);
        for &next in &graph.dependents[node] {
            pending[next] -= 1;
            if pending[next] == 0 {
                ready.push(Reverse(next));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every leftover node still waits on a leftover dependency, so following
    // dependencies from any leftover node must revisit one: that loop is a cycle.
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut path = Vec::new();
    let mut node = (0..n).find(|&v| pending[v] > 0).unwrap_or(0);
    let start = loop {
        if let Some(&at) = seen_at.get(&node) {
            break at;
        }
        seen_at.insert(node, path.len());
        path.push(node);
        node = graph.deps[node].iter().copied().find(|&d| pending[d] > 0).unwrap_or(node);
    };
    let mut cycle: Vec<u32> = path[start..].iter().copied().map(to_index).collect();
    if let Some(min_at) = cycle.iter().enumerate().min_by_key(|&(_, v)| *v).map(|(i, _)| i) {
        cycle.rotate_left(min_at);
    }
    Err(PlanError::Cycle(cycle))
}
