"""The Users page (platform admins): list and create local users; one user's page changes role, groups, active
flag and password. A GET changes nothing; refusals re-render the form naming the field (400, or 409 for a taken
username or the last platform admin)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from trainer_portal import roles
from trainer_portal.permissions import capability_required

from .errors import UserError
from .forms import PasswordResetForm, UserCreateForm, UserUpdateForm
from .selectors import user_row, user_rows
from .services import user_create, user_set_password, user_update

# The services name fields as the API does; the forms' names differ for one.
_FORM_FIELD = {"isActive": "is_active", "user": None}


def _refuse(form, exc: UserError) -> int:
    field = _FORM_FIELD.get(exc.field, exc.field)
    form.add_error(field if field in form.fields else None, exc.message)
    return exc.status


@require_http_methods(["GET", "POST"])
@capability_required(roles.USERS_MANAGE)
def user_list(request: HttpRequest) -> HttpResponse:
    """GET: every local user and the "new user" form. POST: create a user (then back to the list)."""
    form = UserCreateForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                user = user_create(username=data["username"], password=data["password"], role=data["role"],
                                   groups=data["groups"])
            except UserError as exc:
                status = _refuse(form, exc)
            else:
                messages.success(request, f"User {user.username} created with the role "
                                          f"{roles.ROLE_LABELS[data['role']]}.")
                return redirect("users:list")
    return render(request, "users/list.html", {"form": form, "rows": user_rows()}, status=status)


def _detail(request, row, *, form=None, password_form=None, status=200) -> HttpResponse:
    form = form or UserUpdateForm(initial={"role": row.role, "groups": ", ".join(row.groups),
                                           "is_active": row.user.is_active})
    return render(request, "users/detail.html", {"row": row, "form": form,
                                                 "password_form": password_form or PasswordResetForm()},
                  status=status)


@require_http_methods(["GET", "POST"])
@capability_required(roles.USERS_MANAGE)
def user_detail(request: HttpRequest, user_id: int) -> HttpResponse:
    """GET: one user's role, groups and state. POST: change them."""
    row = user_row(user_id)
    if row is None:
        raise Http404("No such user.")
    if request.method == "GET":
        return _detail(request, row)
    form = UserUpdateForm(request.POST)
    if not form.is_valid():
        return _detail(request, row, form=form, status=400)
    try:
        user_update(user_id=user_id, role=form.cleaned_data["role"], groups=form.cleaned_data["groups"],
                    is_active=form.cleaned_data["is_active"])
    except UserError as exc:
        status = _refuse(form, exc)
        return _detail(request, user_row(user_id) or row, form=form, status=status)
    messages.success(request, f"Saved {row.user.username}.")
    return redirect("users:detail", user_id=user_id)


@require_POST
@capability_required(roles.USERS_MANAGE)
def user_password(request: HttpRequest, user_id: int) -> HttpResponse:
    """POST: set a new password for the user (their sessions end, except the admin's own current one)."""
    row = user_row(user_id)
    if row is None:
        raise Http404("No such user.")
    form = PasswordResetForm(request.POST)
    if form.is_valid():
        try:
            user = user_set_password(user_id=user_id, password=form.cleaned_data["password"])
        except UserError as exc:
            return _detail(request, row, password_form=form, status=_refuse(form, exc))
        if user.pk == request.user.pk:
            update_session_auth_hash(request, user)
        messages.success(request, f"New password set for {user.username}.")
        return redirect("users:detail", user_id=user_id)
    return _detail(request, row, password_form=form, status=400)
