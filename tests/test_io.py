"""Readers and writers of ardselect.io (no ARD fit here)."""

from __future__ import annotations

import gzip
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ardselect import io as aio
from ardselect.exceptions import DataError, FileFormatError, LabelError, MissingFileError

# ------------------------------------------------------------------------------ formats


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.h5ad", "h5ad"),
        ("a.CSV", "csv"),
        ("a.csv.gz", "csv"),
        ("a.tsv", "tsv"),
        ("a.txt.gz", "tsv"),
        ("a.gct", "gct"),
        ("a.gct.gz", "gct"),
    ],
)
def test_detect_format(name, fmt):
    assert aio.detect_format(name) == fmt


def test_detect_format_unknown():
    with pytest.raises(FileFormatError, match=r"cannot tell the format of a\.xlsx.*known: \.h5ad"):
        aio.detect_format("a.xlsx")


def test_missing_file(tmp_path):
    with pytest.raises(MissingFileError, match="file not found"):
        aio.read_data(tmp_path / "nope.h5ad")


def test_csv_samples_in_rows(tmp_path, expression):
    df = expression()
    df.insert(2, "batch", "b1")
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    adata = aio.read_data(path, label_key="label")
    assert adata.shape == (36, 24)
    assert list(adata.obs.columns) == ["label", "batch"]
    assert adata.obs_names[0] == "s00"
    assert adata.var_names[0] == "G0"
    np.testing.assert_array_equal(adata.X, df.iloc[:, 3:].to_numpy())


def test_csv_numeric_sample_ids(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    df["sample"] = range(101, 107)
    df.to_csv(tmp_path / "x.csv", index=False)
    adata = aio.read_data(tmp_path / "x.csv", label_key="label")
    assert list(adata.var_names) == ["G0", "G1", "G2"]
    assert adata.obs_names[0] == "101"


def test_tsv_gz_numeric_labels(tmp_path, expression):
    df = expression()
    df["label"] = (df["label"] == "case").astype(int)
    path = tmp_path / "x.tsv.gz"
    df.to_csv(path, sep="\t", index=False)
    adata = aio.read_data(path, label_key="label")
    assert "label" in adata.obs.columns  # a numeric label column is not taken as a gene
    assert adata.n_vars == 24


def test_csv_genes_in_rows_with_label_row(tmp_path, expression):
    df = expression(n_samples=6, n_genes=4)
    genes = df.drop(columns=["sample", "label"]).T
    genes.columns = df["sample"].to_numpy()
    genes.insert(0, "Description", [f"gene {g}" for g in genes.index])
    label_row = pd.DataFrame([["", *df["label"]]], columns=genes.columns, index=["label"])
    table = pd.concat([label_row, genes])
    path = tmp_path / "g.csv"
    table.rename_axis("gene").to_csv(path)
    adata = aio.read_data(path, genes_in_rows=True, label_key="label")
    assert adata.shape == (6, 4)
    assert list(adata.obs["label"]) == list(df["label"])
    assert adata.var.loc["G2", "Description"] == "gene G2"
    np.testing.assert_allclose(adata.X, df.iloc[:, 2:].to_numpy())


def test_labels_from_table(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    path = tmp_path / "x.csv"
    df.drop(columns="label").to_csv(path, index=False)
    lab = tmp_path / "labels.tsv"
    df[["sample", "label"]].iloc[::-1].to_csv(lab, sep="\t", index=False)  # any order
    adata = aio.read_data(path, labels=lab, label_key="grp")
    assert list(adata.obs["grp"]) == list(df["label"])
    df[["sample", "label"]].iloc[:4].to_csv(lab, sep="\t", index=False)
    with pytest.raises(LabelError, match="no label for 2 sample"):
        aio.read_data(path, labels=lab)


def test_annotation_rows_and_label_codes_with_genes_in_rows(tmp_path, expression):
    # Issue 12, item 3, genes in rows: an `age` row is an annotation (warned), and a row that
    # encodes labels given in a separate file is refused.
    df = expression(n_samples=8, n_genes=4)
    genes = df.drop(columns=["sample", "label"]).T
    genes.columns = df["sample"].to_numpy()
    genes.loc["age"] = np.arange(30.0, 38.0)
    path = tmp_path / "g.csv"
    genes.rename_axis("gene").to_csv(path)
    with pytest.warns(aio.AnnotationColumnWarning, match=r"left out of the genes: 'age'"):
        adata = aio.read_data(path, genes_in_rows=True)
    assert list(adata.var_names) == ["G0", "G1", "G2", "G3"]
    np.testing.assert_array_equal(adata.obs["age"], np.arange(30.0, 38.0))
    genes.loc["status"] = np.where(df["label"] == "case", 1.0, 0.0)
    genes.loc["z"] = genes.loc["status"]
    genes.rename_axis("gene").to_csv(path)
    lab = tmp_path / "labels.csv"
    df[["sample", "label"]].to_csv(lab, index=False)
    with pytest.raises(DataError, match=r"column\(s\) 'z' encode the label 'label'"), \
            pytest.warns(aio.AnnotationColumnWarning, match="'age', 'status'"):
        aio.read_data(path, genes_in_rows=True, labels=lab)
    adata = aio.read_data(path, genes_in_rows=True, labels=lab, gene_columns=["G0:G3"])
    assert list(adata.var_names) == ["G0", "G1", "G2", "G3"]
    assert {"age", "status", "z"} <= set(adata.obs.columns)
    # Without the checks (predict: the model takes its genes by name) every row is a gene.
    assert aio.read_data(path, genes_in_rows=True, check_columns=False).n_vars == 7


def test_sample_ids_found_outside_the_first_column(tmp_path, expression):
    # A table whose columns were reordered: the `sample` column still names the samples (and is
    # not an annotation); with two such columns, or ids that repeat, none is guessed.
    df = expression(n_samples=12, n_genes=4)
    cols = ["G2", "label", "sample", "G0", "G1", "G3"]
    path = tmp_path / "t.csv"
    df[cols].to_csv(path, index=False)
    adata = aio.read_data(path)
    assert list(adata.obs_names) == df["sample"].tolist()
    assert "sample" not in adata.obs.columns
    assert list(adata.var_names) == ["G2", "G0", "G1", "G3"]
    df.assign(id=df["sample"] + "x")[[*cols, "id"]].to_csv(path, index=False)
    assert aio.read_data(path).obs_names[0] == "sample_1"
    df.assign(sample="s")[cols].to_csv(path, index=False)
    assert aio.read_data(path).obs_names[0] == "sample_1"


def test_decimal_commas_are_refused(tmp_path, expression):
    # A table saved with decimal commas (a European locale): read as text, its genes would have
    # become annotations and the fit gone on with the one integer column left.
    df = expression(n_samples=10, n_genes=4)
    df["G4"] = np.random.default_rng(0).poisson(3, 10)
    df["tissue"] = ["liver", "lung"] * 5
    path = tmp_path / "t.tsv"
    df.to_csv(path, sep="\t", index=False, decimal=",")
    with pytest.raises(FileFormatError, match=r"4 column\(s\) of t.tsv hold numbers written with a "
                       r"decimal comma \('G0', 'G1', 'G2', 'G3'; e.g. '-?\d*,\d+'\)"):
        aio.read_data(path)
    genes = df.drop(columns=["label", "tissue"]).set_index("sample").T.rename_axis("gene")
    genes.to_csv(path, sep="\t", decimal=",")
    with pytest.raises(FileFormatError, match="decimal comma"):
        aio.read_data(path, genes_in_rows=True)
    # With decimal points the same table reads, the text column as an annotation.
    df.to_csv(path, sep="\t", index=False)
    adata = aio.read_data(path)
    assert list(adata.var_names) == ["G0", "G1", "G2", "G3", "G4"]
    assert list(adata.obs["tissue"][:2]) == ["liver", "lung"]
    # One broken spreadsheet cell makes a gene column text: refused, not set aside.
    df.astype({"G2": object}).assign(G2=lambda d: d["G2"].where(d.index != 3, "#VALUE!")).to_csv(
        path, sep="\t", index=False)
    with pytest.raises(FileFormatError, match=r"1 column\(s\) of t.tsv hold numbers and a few "
                       r"spreadsheet error values.*'G2' \('#VALUE!'\)"):
        aio.read_data(path)
    wide = expression(n_samples=6, n_genes=20)
    stray = wide.drop(columns="label").set_index("sample").T.rename_axis("gene").astype(object)
    stray.iloc[1, 2] = "#VALUE!"
    stray.loc["label"] = wide.set_index("sample")["label"]
    stray.to_csv(path, sep="\t")
    with pytest.raises(FileFormatError, match=r"'s02' \('#VALUE!'\)"):
        aio.read_data(path, genes_in_rows=True, label_key="label")
    # A column named as an annotation may hold a few words: it goes to obs as before.
    df.assign(age=[30, 41, "unknown", 52, 60, 33, 47, 58, 61, 39]).to_csv(path, sep="\t",
                                                                         index=False)
    assert list(aio.read_data(path).obs["age"][:3]) == ["30", "41", "unknown"]
    # Other words among numbers make an annotation, as before: a chromosome column.
    chrom = stray.copy()
    chrom.iloc[1, 2] = 0.5
    chrom.insert(0, "chromosome", [str(i % 22 + 1) for i in range(19)] + ["X", "label"])
    chrom.to_csv(path, sep="\t")
    back = aio.read_data(path, genes_in_rows=True, label_key="label")
    assert back.n_vars == 20
    assert back.var["chromosome"].iloc[-1] == "X"
    # The label row alone is not a stray value.
    stray.iloc[1, 2] = 0.5
    stray.to_csv(path, sep="\t")
    assert aio.read_data(path, genes_in_rows=True, label_key="label").n_vars == 20


@pytest.mark.parametrize("word", ["n/a?", "abc"])
def test_a_word_in_a_gene_column_is_reported(tmp_path, expression, word):
    # One stray word once turned a gene into an annotation without a word said.
    df = expression(n_samples=10, n_genes=5).astype({"G2": object})
    df.loc[3, "G2"] = word
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    with pytest.warns(aio.AnnotationColumnWarning,
                      match=rf"1 column\(s\) of t\.csv hold numbers and a few words, and are read "
                            rf"as text, a sample annotation, not as a gene: 'G2' \('{re.escape(word)}' "
                            rf"in row 's03'\); make those values numbers or empty"):
        adata = aio.read_data(path)
    assert "G2" not in adata.var_names
    # Genes in rows: a sample column with a word is left out, and said so.
    wide = df.drop(columns="label").set_index("sample").T.rename_axis("gene")
    wide.to_csv(path)
    with pytest.warns(aio.AnnotationColumnWarning,
                      match=r"read as text, a gene annotation, not as a sample: 's03' \("
                            rf"'{re.escape(word)}' in row 'G2'\)"):
        adata = aio.read_data(path, genes_in_rows=True)
    assert "s03" not in adata.obs_names


def test_h5ad_numbers_stored_as_text(tmp_path, adata_factory):
    import anndata as ad

    adata = adata_factory(n_samples=8, n_genes=3)
    path = tmp_path / "t.h5ad"
    ad.AnnData(adata.X.astype(str), obs=adata.obs, var=adata.var).write_h5ad(path)
    back = aio.read_data(path)
    assert back.X.dtype == np.float64
    np.testing.assert_array_equal(back.X, adata.X)
    text = adata.X.astype(str)
    text[3, 2] = "abc"
    ad.AnnData(text, obs=adata.obs, var=adata.var).write_h5ad(path)
    with pytest.raises(DataError, match=r"X of t\.h5ad holds text, not numbers: 'abc' for gene "
                                        r"'G2' in sample 's03'"):
        aio.read_data(path)


@pytest.mark.parametrize(("edit", "pattern"), [
    (lambda a: setattr(a, "obs_names", ["s0"] * a.n_obs),
     r"1 duplicated sample name\(s\) \(s0\); .*obs_names_make_unique"),
    (lambda a: setattr(a, "var_names", ["G0", "", "G2"]), r"gene name number 2 is empty"),
    (lambda a: setattr(a, "var_names", ["G0", "G\t1", "G2"]),
     r"gene name 'G\\t1' holds a tab, line break or other control character"),
    (lambda a: setattr(a, "obs_names", [f"s{i}\n" for i in range(a.n_obs)]),
     r"sample name 's0\\n' holds a tab, line break"),
])
def test_names_that_break_the_outputs_are_refused(tmp_path, adata_factory, edit, pattern):
    adata = adata_factory(n_samples=8, n_genes=3)
    edit(adata)
    path = tmp_path / "t.h5ad"
    adata.write_h5ad(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # anndata's about names that repeat
        with pytest.raises(DataError, match=pattern):
            aio.read_data(path)


def test_no_samples_or_genes(tmp_path, adata_factory):
    adata = adata_factory(n_samples=8, n_genes=3)
    path = tmp_path / "t.h5ad"
    adata[:0].copy().write_h5ad(path)
    with pytest.raises(DataError, match=r"t\.h5ad holds 0 samples x 3 genes: nothing to fit"):
        aio.read_data(path)


@pytest.mark.parametrize("suffix", [".csv.xz", ".csv.gz", ".csv.bz2", ".csv.zip"])
def test_a_compression_suffix_on_plain_text_is_refused(tmp_path, suffix):
    # A plain .csv.xz was an internal error (LZMAError).
    path = tmp_path / f"t{suffix}"
    path.write_text("sample,label,G1\ns1,a,1\n")
    with pytest.raises(FileFormatError, match=rf"cannot read t\{suffix} as a CSV table"):
        aio.read_data(path)


def test_row_numbers_are_not_genes(tmp_path, expression):
    # An id column (here the UCI row number of a shuffled table, named like a gene would not be)
    # is set aside by its name or, whatever its name, by its content: each of n consecutive
    # integers once. Integer counts that repeat stay genes.
    df = expression(n_samples=30, n_genes=5).sample(frac=1.0, random_state=0)
    rng = np.random.default_rng(0)
    df["uci_row"] = rng.permutation(30)
    df["x17"] = rng.permutation(np.arange(101, 131)).astype(float)
    df["G_pois"] = rng.poisson(20, 30)  # integer-valued, repeats: a gene
    df["G_gap"] = np.r_[np.arange(29), 30]  # distinct integers but not consecutive: a gene
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    with pytest.warns(aio.AnnotationColumnWarning) as record:
        adata = aio.read_data(path)
    messages = [str(w.message) for w in record]
    assert any("left out of the genes: 'uci_row'" in m for m in messages)
    assert any("hold row numbers (each of 30 consecutive integers once)" in m and "'x17'" in m
               for m in messages)
    assert list(adata.var_names) == ["G0", "G1", "G2", "G3", "G4", "G_pois", "G_gap"]
    np.testing.assert_array_equal(adata.obs["x17"], df["x17"].to_numpy())
    # Named as a gene, it is one; without the checks every numeric column is a gene.
    assert "x17" in aio.read_data(path, gene_columns=["G0:x17"]).var_names
    assert aio.read_data(path, check_columns=False).n_vars == 9
    # Fewer samples than the rule needs: a permutation of 0..n-1 may be chance.
    small = tmp_path / "s.csv"
    df.iloc[:9].assign(x17=np.arange(9.0)).to_csv(small, index=False)
    with pytest.warns(aio.AnnotationColumnWarning, match="'uci_row'"):
        assert "x17" in aio.read_data(small).var_names
    assert aio.looks_like_annotation("row_number")
    # Genes given as ranks (every gene a permutation of 1..n) are not row numbers: they stay genes.
    ranks = df[["sample", "label"]].copy()
    for g in range(6):
        ranks[f"R{g}"] = rng.permutation(np.arange(1, 31))
    ranks.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", aio.AnnotationColumnWarning)
        assert list(aio.read_data(path).var_names) == [f"R{g}" for g in range(6)]


def test_column_choices_refused_outside_tables(tmp_path, adata_factory):
    path = tmp_path / "a.h5ad"
    adata_factory(n_samples=6, n_genes=3).write_h5ad(path)
    with pytest.raises(FileFormatError, match="applies to CSV/TSV tables, not h5ad"):
        aio.read_data(path, drop=["G0"])


def test_duplicated_genes_csv(tmp_path, expression):
    df = expression(n_samples=6, n_genes=3)
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    text = path.read_text().replace("G2", "G1", 1)
    path.write_text(text)
    with pytest.raises(DataError, match=r"1 duplicated gene name\(s\) \(G1"):
        aio.read_data(path, label_key="label")


def test_not_a_table(tmp_path):
    path = tmp_path / "x.csv.gz"
    path.write_bytes(b"this is not gzip")
    with pytest.raises(FileFormatError, match="cannot read x.csv.gz as a CSV table"):
        aio.read_data(path)


# ------------------------------------------------------------------------------ h5ad


def test_h5ad_wrong_signature(tmp_path):
    path = tmp_path / "x.h5ad"
    path.write_text("sample,label\n")
    with pytest.raises(FileFormatError, match="not an HDF5/h5ad file"):
        aio.read_data(path)


def test_h5ad_truncated(tmp_path, adata_factory):
    path = tmp_path / "x.h5ad"
    adata_factory().write_h5ad(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(FileFormatError, match="cannot read x.h5ad as h5ad"):
        aio.read_data(path)


def test_h5ad_layer(tmp_path, adata_factory):
    adata = adata_factory()
    adata.layers["counts"] = sp.csr_matrix(np.round(adata.X))
    path = tmp_path / "x.h5ad"
    adata.write_h5ad(path)
    back = aio.read_data(path, layer="counts")
    assert sp.issparse(back.X)
    with pytest.raises(DataError, match="layer 'nope' not found.*available layers: counts"):
        aio.read_data(path, layer="nope")
    with pytest.raises(FileFormatError, match="genes-in-rows applies to CSV/TSV"):
        aio.read_data(path, genes_in_rows=True)


# ------------------------------------------------------------------------------ GCT / CLS


def test_gct_cls_round_trip(tmp_path, adata_factory):
    adata = adata_factory(n_samples=8, n_genes=5)
    gct = tmp_path / "x.gct"
    cls = tmp_path / "x.cls"
    aio.write_gct(adata, gct, description_key="symbol")
    aio.write_cls(adata.obs["label"], cls)
    assert gct.read_text().startswith("#1.2\n5\t8\nName\tDescription\ts00\t")
    back = aio.read_data(gct, labels=cls)
    np.testing.assert_allclose(back.X, adata.X, rtol=1e-9)
    assert list(back.var_names) == list(adata.var_names)
    assert list(back.var["description"]) == list(adata.var["symbol"])
    assert list(back.obs["label"]) == list(adata.obs["label"])


def test_gct_gz_round_trip(tmp_path, adata_factory):
    adata = adata_factory(n_samples=4, n_genes=3)
    path = tmp_path / "x.gct.gz"
    aio.write_gct(adata, path)
    with gzip.open(path, "rt") as fh:
        assert fh.readline() == "#1.2\n"
    np.testing.assert_allclose(aio.read_gct(path).X, adata.X, rtol=1e-9)


def test_gct_errors(tmp_path):
    path = tmp_path / "x.gct"
    path.write_text("#1.3\n1\t1\n")
    with pytest.raises(FileFormatError, match="not a GCT 1.2 file"):
        aio.read_gct(path)
    path.write_text("#1.2\n2\t2\nName\tDescription\ta\tb\ng1\td\t1\t2\n")
    with pytest.raises(FileFormatError, match="declares 2 genes x 2 samples but the table has 1 x 2"):
        aio.read_gct(path)
    path.write_text("#1.2\n2\t1\nName\tDescription\ta\ng1\td\t1\ng1\td\t2\n")
    with pytest.raises(DataError, match="duplicated gene name"):
        aio.read_gct(path)


def test_cls_numeric_tokens(tmp_path):
    path = tmp_path / "x.cls"
    path.write_text("5 2 1\n# AML ALL\n1 1 0 0 1\n")
    # First distinct token (1) is the first name (AML), as the GSEA documentation says.
    assert list(aio.read_cls(path)) == ["AML", "AML", "ALL", "ALL", "AML"]


def test_cls_errors(tmp_path):
    path = tmp_path / "x.cls"
    path.write_text("4 2 1\n# A B\nA A B\n")
    with pytest.raises(FileFormatError, match="declares 4 samples but line 3 has 3 labels"):
        aio.read_cls(path)
    path.write_text("just text\n")
    with pytest.raises(FileFormatError, match="not a categorical CLS file"):
        aio.read_cls(path)
    with pytest.raises(LabelError, match="cannot be empty or contain spaces"):
        aio.write_cls(["a b", "c"], tmp_path / "y.cls")


def test_cls_length_mismatch(tmp_path, adata_factory):
    adata = adata_factory(n_samples=4, n_genes=3)
    gct = tmp_path / "x.gct"
    aio.write_gct(adata, gct)
    cls = tmp_path / "x.cls"
    aio.write_cls(["a", "b", "a"], cls)
    with pytest.raises(LabelError, match="3 labels but the data have 4 samples"):
        aio.read_data(gct, labels=cls)


# ------------------------------------------------------------------------------ writers


def test_atomic_write_cleans_up(tmp_path):
    target = tmp_path / "out.txt"

    def interrupted_write():
        with aio.atomic_write(target) as fh:
            fh.write("partial")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_write()
    assert list(tmp_path.iterdir()) == []
    with aio.atomic_write(target) as fh:
        fh.write("done\n")
    assert target.read_text() == "done\n"
    assert list(tmp_path.iterdir()) == [target]


def test_write_gmt(tmp_path):
    path = tmp_path / "x.gmt"
    aio.write_gmt({"A_vs_rest": ("desc\twith tab", ["g1", "g2"]), "B": ("d", [])}, path)
    assert path.read_text() == "A_vs_rest\tdesc with tab\tg1\tg2\nB\td\n"


def test_ranked_tsv_formats(tmp_path):
    table = pd.DataFrame(
        {
            "rank": [1, 2],
            "gene": ["a", "b"],
            "selected": [True, False],
            "alpha": [0.123456789012, np.inf],
            "entered_step": pd.array([3, pd.NA], dtype="Int64"),
        }
    )
    path = tmp_path / "g.tsv"
    aio.write_tsv(table, path)
    assert path.read_text() == (
        "rank\tgene\tselected\talpha\tentered_step\n1\ta\ttrue\t0.123456789\t3\n2\tb\tfalse\tinf\t\n"
    )


def test_write_rnk(tmp_path):
    path = tmp_path / "x.rnk"
    aio.write_rnk(pd.DataFrame({"gene": ["a b", "c"], "score": [1.25, -0.1234567890123]}), path)
    assert path.read_text() == "a b\t1.25\nc\t-0.123456789\n"
    with pytest.raises(ValueError, match="needs the columns gene and score"):
        aio.write_rnk(pd.DataFrame({"name": ["a"], "z": [1.0]}), path)
