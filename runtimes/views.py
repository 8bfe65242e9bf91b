from django.http import HttpResponse


def runtime_list(request):
    return HttpResponse("placeholder")
