"""The trees a fitted HDBSCAN exposes, with the hdbscan package's interface (``condensed_tree_``,
``single_linkage_tree_``, ``minimum_spanning_tree_``): each converts to numpy, pandas and
networkx and plots itself with matplotlib (optional dependencies, imported when used).

The single-linkage tree also behaves as its (n − 1) × 4 linkage matrix (``np.asarray``,
indexing, ``len``), which scikit-learn's HDBSCAN users read. The trees cover the rows that
were fitted: rows with inf or NaN are set apart before the fit, so the numbering is that of the
finite rows.
"""

import numpy as np


def _pandas():
    import pandas

    return pandas


def _networkx():
    import networkx

    return networkx


def _colours(cmap):
    """A colour map; the hdbscan package's ``"none"`` is plain black."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    return ListedColormap(["black"]) if cmap == "none" else plt.get_cmap(cmap)


def _axis(axis):
    import matplotlib.pyplot as plt

    return plt.gca() if axis is None else axis


class _Matrix:
    """A tree held as a float matrix that numpy reads as such."""

    def __init__(self, matrix):
        self._matrix = np.asarray(matrix, dtype=np.float64)

    def __array__(self, dtype=None, copy=None):
        return self._matrix if dtype is None else self._matrix.astype(dtype)

    def __len__(self):
        return len(self._matrix)

    def __getitem__(self, item):
        return self._matrix[item]

    def __iter__(self):
        return iter(self._matrix)


class CondensedTree(_Matrix):
    """The condensed tree: rows (parent, child, lambda_val, child_size), points 0..n−1,
    clusters from n (the root). ``selected`` are the clusters the labels come from."""

    def __init__(self, matrix, selected):
        super().__init__(matrix)
        self.selected = [int(c) for c in selected]

    def to_numpy(self):
        """A structured array with fields parent, child, lambda_val, child_size."""
        m = self._matrix
        out = np.empty(len(m), dtype=[("parent", np.intp), ("child", np.intp), ("lambda_val", float), ("child_size", np.intp)])
        out["parent"], out["child"], out["lambda_val"], out["child_size"] = m[:, 0], m[:, 1], m[:, 2], m[:, 3]
        return out

    def to_pandas(self):
        return _pandas().DataFrame(self.to_numpy())

    def to_networkx(self):
        """A directed graph parent → child, the edges weighted by lambda_val, each node with
        its size."""
        g = _networkx().DiGraph()
        for parent, child, lam, size in self._matrix:
            g.add_edge(int(parent), int(child), weight=lam)
            g.nodes[int(child)]["size"] = int(size)
        return g

    def _clusters(self):
        """Per cluster: its birth lambda, parent, and the (lambda, size) of what leaves it."""
        m = self._matrix
        root = int(m[:, 0].min())
        birth, parent = {root: 0.0}, {root: None}
        leaving = {root: []}
        for p, c, lam, size in m:
            p, c = int(p), int(c)
            leaving.setdefault(p, []).append((lam, size))
            if c >= root:
                birth[c], parent[c] = lam, p
                leaving.setdefault(c, [])
        return root, birth, parent, leaving

    def plot(self, leaf_separation=1, cmap="viridis", select_clusters=False, label_clusters=False,
             selection_palette=None, axis=None, colorbar=True, log_size=False, max_rectangles_per_icicle=20):
        """The icicle plot: each cluster a column from its birth down, as wide as the points it
        still holds at each lambda, coloured by that count; its children below it.
        ``select_clusters`` outlines the selected clusters (``selection_palette`` their
        colours), ``label_clusters`` numbers them. Returns the axis."""
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle

        ax = _axis(axis)
        root, birth, parent, leaving = self._clusters()
        children = {c: [k for k, p in parent.items() if p == c] for c in birth}
        size = {c: sum(s for _, s in leaving[c]) for c in birth}
        # x positions: the leaves left to right, a parent centred over its children
        x, next_x = {}, [0.0]

        def place(c):
            if not children[c]:
                x[c] = next_x[0] + size[c] / 2
                next_x[0] += size[c] + leaf_separation * max(size.values()) / 20
            else:
                for k in sorted(children[c]):
                    place(k)
                x[c] = np.mean([x[k] for k in children[c]])

        place(root)
        lam_max = max((lam for c in birth for lam, _ in leaving[c] if np.isfinite(lam)), default=1.0)
        colours = _colours(cmap)
        norm = np.log(max(size.values())) if log_size else max(size.values())
        for c in birth:
            events = sorted(leaving[c])
            remaining = size[c]
            levels = np.linspace(birth[c], max(lam for lam, _ in events) if events else birth[c], max_rectangles_per_icicle + 1)
            for top, bottom in zip(levels[:-1], levels[1:]):
                width = remaining - sum(s for lam, s in events if lam < top)
                if width <= 0:
                    break
                value = np.log(width) if log_size else width
                ax.add_patch(Rectangle((x[c] - width / 2, top), width, bottom - top,
                                       color=colours(value / norm if norm > 0 else 0), linewidth=0))
            for k in children[c]:
                ax.plot([x[c], x[k]], [birth[k], birth[k]], color="black", linewidth=1)
        if select_clusters:
            palette = selection_palette or plt.rcParams["axes.prop_cycle"].by_key()["color"]
            for i, c in enumerate(self.selected):
                bottom = max(lam for lam, _ in leaving[c]) if leaving[c] else birth[c]
                ax.add_patch(Rectangle((x[c] - size[c] / 2, birth[c]), size[c], bottom - birth[c], fill=False,
                                       edgecolor=palette[i % len(palette)], linewidth=2))
                if label_clusters:
                    ax.annotate(str(i), (x[c], birth[c]), ha="center", va="bottom")
        ax.set_xlim(0, max(next_x[0], 1))
        ax.set_ylim(lam_max * 1.05, 0)
        ax.set_xticks([])
        ax.set_ylabel("λ value")
        ax.set_title("Condensed tree")
        if colorbar:
            mappable = plt.cm.ScalarMappable(cmap=colours, norm=plt.Normalize(0, norm))
            plt.colorbar(mappable, ax=ax, label="log(Number of points)" if log_size else "Number of points")
        return ax


class SingleLinkageTree(_Matrix):
    """The single-linkage tree of the mutual-reachability distance, scipy's linkage layout:
    rows (left, right, distance, size), merge i making node n + i."""

    def to_numpy(self):
        return self._matrix.copy()

    def to_pandas(self):
        m = self._matrix
        n = len(m) + 1
        return _pandas().DataFrame({
            "parent": np.arange(n, 2 * n - 1), "left_child": m[:, 0].astype(np.intp),
            "right_child": m[:, 1].astype(np.intp), "distance": m[:, 2], "size": m[:, 3].astype(np.intp),
        })

    def to_networkx(self):
        """A graph of the merges: node n + i joined to its two children, the edges weighted by
        the merge distance, each node with its size."""
        g = _networkx().Graph()
        n = len(self._matrix) + 1
        g.add_nodes_from(range(n), size=1)
        for i, (left, right, distance, size) in enumerate(self._matrix):
            g.add_node(n + i, size=int(size))
            g.add_edge(n + i, int(left), weight=distance)
            g.add_edge(n + i, int(right), weight=distance)
        return g

    def get_clusters(self, cut_distance, min_cluster_size=5):
        """The flat clustering at ``cut_distance`` (DBSCAN*): see ``HDBSCAN.dbscan_clustering``."""
        from ._estimators import _cut_single_linkage

        return _cut_single_linkage(self._matrix, cut_distance, min_cluster_size)

    def plot(self, axis=None, truncate_mode=None, p=0, vary_line_width=True, cmap="viridis", colorbar=True):
        """The dendrogram (scipy's, ``truncate_mode`` and ``p`` as there), each link coloured
        by its merge distance (``cmap``; ``vary_line_width``: wider for lower merges).
        Returns the axis."""
        import matplotlib.pyplot as plt
        from matplotlib.collections import LineCollection
        from scipy.cluster.hierarchy import dendrogram

        ax = _axis(axis)
        d = dendrogram(self._matrix, truncate_mode=truncate_mode, p=p, no_plot=True)
        heights = np.array([max(dc) for dc in d["dcoord"]])
        top = heights.max() if len(heights) else 1.0
        lines = [list(zip(ic, dc)) for ic, dc in zip(d["icoord"], d["dcoord"])]
        widths = 1 + 2 * (1 - heights / top) if vary_line_width else 1.0
        colours = _colours(cmap)(heights / top if top > 0 else heights)
        ax.add_collection(LineCollection(lines, colors=colours, linewidths=widths))
        ax.set_xlim(0, 10 * len(d["leaves"]))
        ax.set_ylim(0, top * 1.05)
        ax.set_xticks([])
        ax.set_ylabel("distance")
        ax.set_title("Single-linkage tree")
        if colorbar:
            mappable = plt.cm.ScalarMappable(cmap=_colours(cmap), norm=plt.Normalize(0, top))
            plt.colorbar(mappable, ax=ax, label="merge distance")
        return ax


class MinimumSpanningTree(_Matrix):
    """The minimum spanning tree of the mutual-reachability distance: rows (from, to,
    distance), by increasing distance; ``data`` the fitted points (for ``plot``)."""

    def __init__(self, matrix, data):
        super().__init__(matrix)
        self._data = data

    def to_numpy(self):
        return self._matrix.copy()

    def to_pandas(self):
        m = self._matrix
        return _pandas().DataFrame({"from": m[:, 0].astype(np.intp), "to": m[:, 1].astype(np.intp), "distance": m[:, 2]})

    def to_networkx(self):
        g = _networkx().Graph()
        g.add_nodes_from(range(len(self._matrix) + 1))
        for a, b, w in self._matrix:
            g.add_edge(int(a), int(b), weight=w)
        return g

    def plot(self, axis=None, node_size=40, node_color="k", node_alpha=0.8, edge_alpha=0.5, edge_cmap="viridis_r",
             edge_linewidth=2, vary_line_width=True, colorbar=True):
        """The tree over the points (more than two features: their first two principal
        components), each edge coloured by its distance. Returns the axis."""
        import matplotlib.pyplot as plt
        from matplotlib.collections import LineCollection

        if self._data is None:
            raise ValueError("the spanning tree of a precomputed distance matrix has no points to plot")
        ax = _axis(axis)
        xy = np.asarray(self._data, dtype=np.float64)
        if xy.shape[1] > 2:
            from sklearn.decomposition import PCA

            xy = PCA(n_components=2).fit_transform(xy)
        elif xy.shape[1] == 1:
            xy = np.column_stack([xy[:, 0], np.zeros(len(xy))])
        m = self._matrix
        ends = m[:, :2].astype(np.intp)
        weights = m[:, 2]
        top = weights.max() if len(weights) else 1.0
        widths = edge_linewidth * (1 + (1 - weights / top)) if vary_line_width and top > 0 else edge_linewidth
        lines = LineCollection(xy[ends], cmap=_colours(edge_cmap), linewidths=widths, alpha=edge_alpha)
        lines.set_array(weights)
        ax.add_collection(lines)
        ax.scatter(xy[:, 0], xy[:, 1], s=node_size, c=node_color, alpha=node_alpha, zorder=2)
        ax.set_title("Minimum spanning tree (mutual reachability)")
        ax.set_xlabel("feature 0" if self._data.shape[1] <= 2 else "principal component 1")
        ax.set_ylabel("feature 1" if self._data.shape[1] <= 2 else "principal component 2")
        if colorbar:
            plt.colorbar(lines, ax=ax, label="mutual reachability distance")
        return ax
