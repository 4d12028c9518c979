"""Live models (models@run.time): metamodels, models with change notifications and
transactions, and their text/JSON formats (see docs/models.md).

    from cepflow.models import parse_metamodel, Model
    mm = parse_metamodel("metamodel cps class Host { attr totalCpu: int }")
    model = Model(mm)
    with model.transaction(ts=40):
        host = model.create("Host", "h1", totalCpu=8)
"""

from cepflow.models.changes import AttributeBlock, BlockChanges, Change, Commit
from cepflow.models.jsonio import (
    JsonFormatError,
    load_model,
    metamodel_from_dict,
    metamodel_to_dict,
    model_from_dict,
    model_to_dict,
    read_metamodel,
    save_metamodel,
    save_model,
)
from cepflow.models.live_model import MObject, Model, ModelError
from cepflow.models.metamodel import (
    MANY,
    Attribute,
    Metamodel,
    MetamodelBuilder,
    MetamodelError,
    ModelClass,
    Reference,
)
from cepflow.models.mmparser import parse_metamodel

__all__ = [
    "MANY",
    "Attribute",
    "AttributeBlock",
    "BlockChanges",
    "Change",
    "Commit",
    "JsonFormatError",
    "MObject",
    "Metamodel",
    "MetamodelBuilder",
    "MetamodelError",
    "Model",
    "ModelClass",
    "ModelError",
    "Reference",
    "load_model",
    "metamodel_from_dict",
    "metamodel_to_dict",
    "model_from_dict",
    "model_to_dict",
    "parse_metamodel",
    "read_metamodel",
    "save_metamodel",
    "save_model",
]
