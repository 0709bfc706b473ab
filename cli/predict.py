"""``ardselect predict``: apply a saved model to new data."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ._options import (
    DataArg,
    GenesInRowsOpt,
    LabelsOpt,
    LayerOpt,
    OverwriteOpt,
    QuietOpt,
    check_source,
    input_errors,
    read_unlabelled,
)
from ._util import (
    Transaction,
    UsageError,
    check_input,
    check_output,
    handle_errors,
    info_line,
    is_stream,
)


def predict(
    model: Annotated[
        Path,
        typer.Argument(
            help="model.json written by 'ardselect fit' (the default model or --model "
            "spike-slab).", show_default=False, metavar="MODEL"
        ),
    ],
    data: DataArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Predictions TSV, written atomically; '-' for stdout. Devices "
            "and pipes (/dev/null, /dev/stdout, a FIFO) are written through."
        ),
    ] = Path("-"),
    label_key: Annotated[
        str | None,
        typer.Option(
            "--label-key",
            "-g",
            help="Column with true labels, to report errors (default: the model's label key, if "
            "present).",
            show_default=False,
        ),
    ] = None,
    layer: LayerOpt = None,
    genes_in_rows: GenesInRowsOpt = False,
    labels: LabelsOpt = None,
    lazy: Annotated[
        bool,
        typer.Option("--lazy", help="h5ad/zarr only: leave X on disk and read only the model's "
                     "genes, chunk by chunk (needs dask: the dask extra)."),
    ] = False,
    allow_scale_mismatch: Annotated[
        bool,
        typer.Option("--allow-scale-mismatch",
                     help="Predict data whose signs contradict the training data's (scaled "
                     "values against unscaled ones, e.g. scanpy's pp.scale output against "
                     "log-normalised values), with a warning instead of the error."),
    ] = False,
    overwrite: OverwriteOpt = False,
    quiet: QuietOpt = False,
):
    """Apply a saved model to DATA: predicted class and class probabilities per sample.

    Genes are matched by name; data lacking any of the model's genes are refused with the list.
    The model's preprocessing (floor, cap, log, per-gene centring and scaling) is replayed exactly.
    Data plainly of another kind than the training data (scaled against unscaled values) are
    refused; data that look like another kind get a warning.
    """
    with handle_errors():
        import numpy as np
        import pandas as pd

        import ardselect

        to_stdout = str(out) == "-"
        stream = is_stream(out)
        if not stream:
            check_output(out, overwrite=overwrite, kind="file", inputs=(model, data, labels))
        check_input(model)
        portable = ardselect.model.load_model(model)
        fitted_on = portable.input
        if layer is not None and (fitted_on.use_raw or fitted_on.layer != layer):
            # A model fitted on X scores X: a layer holds other values (scaled X against
            # log-normalised counts, say), which the model's own scaling can hide.
            msg = (f"the model was fitted on {fitted_on} and applies it itself; --layer {layer} "
                   "would score other values")
            raise UsageError(msg)
        layers = check_source(data, layer)
        # (read lazily, only the model's layer is opened; a store lacking it is the model's to refuse)
        adata = read_unlabelled(
            data, genes_in_rows=genes_in_rows, label_key=label_key or "label", labels=labels,
            layer=fitted_on.layer if lazy and fitted_on.layer in (layers or ()) else None,
            covariates=portable.covariates, lazy=lazy)
        with input_errors(data):
            label_key = _true_labels(adata, label_key, portable.data.get("label_key"))
        pseudo = portable.data.get("pseudobulk")
        if isinstance(pseudo, dict) and pseudo.get("donor"):
            # A donor-level model scores donor-level samples: the cells are summed the same way
            # (per donor, and per label when the data have them).
            donor = str(pseudo["donor"])
            if donor not in adata.obs.columns:
                msg = (f"the model was fitted on pseudobulk samples of {donor!r}, which is not a "
                       f"column of {data.name}; give the cells' {donor} as an obs column")
                raise UsageError(msg)
            adata = ardselect.pseudobulk(adata, label_key, donor)
            info_line(f"pseudobulk: {adata.n_obs} samples from the cells of each {donor}"
                      + (f" and {label_key}" if label_key else ""), quiet=quiet)
        proba = portable.predict_proba(  # labelled columns, in classes order
            adata, allow_scale_mismatch=allow_scale_mismatch).to_numpy()
        classes = [str(c) for c in portable.classes]
        pred = np.asarray(classes, dtype=object)[np.argmax(proba, axis=1)]
        table = pd.DataFrame({"sample": adata.obs_names.astype(str)})
        if label_key is not None:
            table["label"] = adata.obs[label_key].astype(str).to_numpy()
        table["predicted"] = pred
        for k, cls in enumerate(classes):
            table[f"prob_{cls}"] = proba[:, k]
        # 12 significant digits: probabilities to better than 1e-12, still readable.
        text = table.to_csv(sep="\t", index=False, lineterminator="\n", float_format="%.12g")
        if to_stdout:
            sys.stdout.write(text)
        elif stream:  # a device or pipe: written through, never replaced
            with open(out, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        else:
            with Transaction() as tx:
                tmp = tx.file(out)
                tmp.write_text(text, encoding="utf-8")
                tx.commit()
        if label_key is not None:
            wrong = int((table["label"] != table["predicted"]).sum())
            info_line(
                f"{wrong} of {len(table)} samples misclassified ({label_key})", quiet=quiet
            )
        if not to_stdout:
            info_line(f"wrote {out}: {len(table)} samples", quiet=quiet)


def _true_labels(adata, label_key, stored_key):
    """The ``obs`` column of true labels to report errors against, or None.

    ``--label-key`` must name a column whose samples all have a label (the input door's rule);
    by default the model's label key, when the data hold it for every sample.
    """
    import ardselect

    if label_key is not None:
        ardselect.io.ExpressionData.labels_of(adata, label_key)
        return label_key
    if stored_key is None or stored_key not in adata.obs.columns:
        return None
    try:
        ardselect.io.ExpressionData.labels_of(adata, stored_key)
    except ardselect.exceptions.LabelError:
        return None
    return stored_key
