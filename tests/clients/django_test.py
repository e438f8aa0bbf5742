"""Django against a running Permafrost server, as a new user starts a project: two apps
(ForeignKey, ManyToManyField, DateTimeField with USE_TZ, TimeField, DurationField, JSONField,
UUIDField), their
migrations made by `makemigrations` and applied by `migrate` with Django's own apps (admin,
auth, contenttypes, sessions), then the ORM calls applications make (bulk_create, annotate,
update_or_create, select_for_update, prefetch_related, JSON and UUID lookups) and the
admin's pages through Django's test client (login, change lists with search and filter, add,
change, delete, history). Django's backend is psycopg 3 with its defaults.

Usage: python3 django_test.py PORT
"""

import datetime
import os
import sys
import tempfile
import textwrap
import uuid

PORT = int(sys.argv[1])
ROOT = tempfile.mkdtemp(prefix="pf-django-")

SHOP_MODELS = '''
import uuid
from django.db import models


class Category(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created = models.DateTimeField(auto_now_add=True)


class Tag(models.Model):
    label = models.CharField(max_length=50)


class Product(models.Model):
    uid = models.UUIDField(default=uuid.uuid4, unique=True)
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="products")
    tags = models.ManyToManyField(Tag, blank=True)
    title = models.CharField(max_length=200)
    price = models.DecimalField(max_digits=10, decimal_places=2)
    attrs = models.JSONField(default=dict)
    updated = models.DateTimeField(auto_now=True)
'''

SHOP_ADMIN = '''
from django.contrib import admin
from .models import Category, Product, Tag

admin.site.register(Category)
admin.site.register(Tag)


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("title", "category", "price", "updated")
    list_filter = ("category",)
    search_fields = ("title",)
'''

NOTES_MODELS = '''
from django.conf import settings
from django.db import models


class Note(models.Model):
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    product = models.ForeignKey("shop.Product", null=True, on_delete=models.SET_NULL)
    body = models.TextField()
    due = models.DateTimeField(null=True)
    at = models.TimeField(null=True)
    lead = models.DurationField(null=True)
    watchers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="watched")
'''

NOTES_ADMIN = '''
from django.contrib import admin
from .models import Note

admin.site.register(Note)
'''

APPS = {
    "shop": {"models.py": SHOP_MODELS, "admin.py": SHOP_ADMIN},
    "notes": {"models.py": NOTES_MODELS, "admin.py": NOTES_ADMIN},
}
for app, files in APPS.items():
    os.makedirs(os.path.join(ROOT, app, "migrations"))
    for name, text in {"__init__.py": "", "migrations/__init__.py": "", **files}.items():
        with open(os.path.join(ROOT, app, name), "w") as f:
            f.write(textwrap.dedent(text))
with open(os.path.join(ROOT, "urls.py"), "w") as f:
    f.write("from django.contrib import admin\nfrom django.urls import path\nurlpatterns = [path('admin/', admin.site.urls)]\n")
sys.path.insert(0, ROOT)

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="not-secret",
    ALLOWED_HOSTS=["testserver"],
    USE_TZ=True,
    TIME_ZONE="Europe/Paris",
    ROOT_URLCONF="urls",
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    INSTALLED_APPS=[
        "shop",
        "notes",
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
    ],
    MIDDLEWARE=[
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    ],
    TEMPLATES=[{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": [
            "django.template.context_processors.request",
            "django.contrib.auth.context_processors.auth",
            "django.contrib.messages.context_processors.messages",
        ]},
    }],
    DATABASES={"default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres", "USER": "u", "HOST": "127.0.0.1", "PORT": str(PORT),
    }},
)
django.setup()

from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.test import Client
from django.test.utils import setup_test_environment

failures = []


def check(what, got, want):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got!r}" + ("" if ok else f" (want {want!r})"))
    if not ok:
        failures.append(what)


call_command("makemigrations", "shop", "notes", verbosity=0)
call_command("migrate", verbosity=0)
with connection.cursor() as c:
    c.execute("SELECT count(*) FROM django_migrations")
    applied = c.fetchone()[0]
check("migrations applied (Django's 18, shop's and notes' first)", applied >= 20, True)

from django.contrib.auth.models import User
from notes.models import Note
from shop.models import Category, Product, Tag

admin = User.objects.create_superuser("admin", "a@example.com", "pw")
bob = User.objects.create_user("bob", "b@example.com", "pw")
books = Category.objects.create(name="books")
games = Category.objects.create(name="games")
tags = Tag.objects.bulk_create([Tag(label=f"t{i}") for i in range(3)])
check("bulk_create returns ids", all(t.id is not None for t in tags), True)
p = Product.objects.create(category=books, title="A", price="9.99", attrs={"color": "red", "n": [1, 2]})
p.tags.set(tags[:2])
Product.objects.bulk_create([Product(category=games, title=f"G{i}", price=i, attrs={"i": i}) for i in range(3)])
check("annotate(Count)", sorted(Category.objects.annotate(n=Count("products")).values_list("name", "n")),
      [("books", 1), ("games", 3)])
obj, created = Product.objects.update_or_create(title="A", defaults={"price": "12.50"})
check("update_or_create", (created, str(obj.price)), (False, "12.50"))
with transaction.atomic():
    check("select_for_update", len(list(Product.objects.select_for_update().filter(category=games))), 3)
check("prefetch_related", [(x.title, sorted(t.label for t in x.tags.all()))
                           for x in Product.objects.prefetch_related("tags").order_by("title")],
      [("A", ["t0", "t1"]), ("G0", []), ("G1", []), ("G2", [])])
got = Product.objects.get(uid=p.uid)
check("UUIDField round trip", (got.uid, type(got.uid)), (p.uid, uuid.UUID))
check("JSONField round trip", got.attrs, {"color": "red", "n": [1, 2]})
check("JSON key lookup", list(Product.objects.filter(attrs__color="red").values_list("title", flat=True)), ["A"])
check("JSON has_key", list(Product.objects.filter(attrs__has_key="i").order_by("title").values_list("title", flat=True)),
      ["G0", "G1", "G2"])
check("JSON contains", list(Product.objects.filter(attrs__contains={"i": 1}).values_list("title", flat=True)), ["G1"])
check("JSON nested key", list(Product.objects.filter(attrs__n__1=2).values_list("title", flat=True)), ["A"])
check("aware datetimes", got.updated.tzinfo is not None and books.created <= got.updated, True)
due = datetime.datetime(2030, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
note = Note.objects.create(author=admin, product=p, body="restock", due=due, at=datetime.time(9, 30),
                           lead=datetime.timedelta(days=2, hours=3))
note.watchers.add(admin, bob)
stored = Note.objects.get(id=note.id)
check("DateTimeField round trip", stored.due, due)
check("TimeField and DurationField round trip", (stored.at, stored.lead),
      (datetime.time(9, 30), datetime.timedelta(days=2, hours=3)))
check("duration arithmetic", Note.objects.filter(due__gt=F("due") - F("lead")).count(), 1)
check("date lookup", Note.objects.filter(due__year=2030, due__month=5).count(), 1)
check("M2M reverse", sorted(bob.watched.values_list("body", flat=True)), ["restock"])
check("M2M filter", list(Tag.objects.filter(product__title="A").order_by("label").values_list("label", flat=True)),
      ["t0", "t1"])
check("Q and exclude", Product.objects.filter(Q(price__gt=1) | Q(title="G0")).exclude(title="A").count(), 2)
p.delete()
check("on_delete SET_NULL", Note.objects.get(id=note.id).product, None)

setup_test_environment()
client = Client()
check("admin login", client.login(username="admin", password="pw"), True)
product = Product.objects.order_by("id").first()
for url in ["/admin/", "/admin/shop/product/", "/admin/shop/product/?q=G", f"/admin/shop/product/?category__id__exact={games.id}",
            "/admin/shop/product/add/", f"/admin/shop/product/{product.id}/change/", "/admin/auth/user/",
            "/admin/notes/note/"]:
    check(f"admin GET {url}", client.get(url).status_code, 200)
r = client.post("/admin/shop/product/add/", {"uid": "5f0c8f9e-1b2a-4c3d-8e9f-0a1b2c3d4e5f", "category": books.id,
                                             "title": "Added", "price": "3.10", "attrs": '{"k": 1}'})
check("admin add", (r.status_code, Product.objects.filter(title="Added").exists()), (302, True))
added = Product.objects.get(title="Added")
r = client.post(f"/admin/shop/product/{added.id}/change/", {"uid": str(added.uid), "category": games.id,
                                                            "title": "Changed", "price": "4.20", "attrs": '{"k": 2}'})
check("admin change", (r.status_code, Product.objects.get(id=added.id).attrs), (302, {"k": 2}))
r = client.post("/admin/shop/product/", {"action": "delete_selected", "_selected_action": [added.id], "post": "yes"})
check("admin delete", (r.status_code, Product.objects.filter(id=added.id).exists()), (302, False))
check("admin history", client.get(f"/admin/shop/product/{product.id}/history/").status_code, 200)

if failures:
    print(f"django: {len(failures)} failed: {failures}")
    sys.exit(1)
print("django: all passed")
